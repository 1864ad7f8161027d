// COLL_CHECK=1 (set by ctest for this binary): ranks that disagree on a collective's arguments
// all get collInvalidUsage naming the first rank that differs, instead of corrupt data or a hang.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collective.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

TEST(ConsistencyCheck, MismatchedCountIsReportedOnEveryRank) {
  ASSERT_NE(getenv("COLL_CHECK"), nullptr) << "run through ctest, which sets COLL_CHECK=1";
  auto failures = runAsThreads(3, [](collComm_t comm, int rank, int) {
    std::vector<std::string> problems;
    std::vector<float> in(100, 1.0f), out(100, 0.0f);
    size_t count = rank == 2 ? 50 : 40;
    collResult_t rc = collAllReduce(in.data(), out.data(), count, collFloat, collSum, comm, nullptr);
    std::string message = collGetLastError(comm);
    if (rc != collInvalidUsage) problems.push_back("rank " + std::to_string(rank) + ": returned " + std::to_string(rc));
    if (message.find("rank 2") == std::string::npos || message.find("count=50") == std::string::npos)
      problems.push_back("rank " + std::to_string(rank) + ": message: " + message);
    if (out[0] != 0.0f) problems.push_back("output written despite the mismatch");
    // Agreeing calls work afterwards.
    rc = collAllReduce(in.data(), out.data(), 40, collFloat, collSum, comm, nullptr);
    if (rc != collSuccess || out[0] != 3.0f) problems.push_back("communicator broken after the check");
    // A different collective on one rank.
    rc = rank == 0 ? collBroadcast(in.data(), out.data(), 40, collFloat, 0, comm, nullptr)
                   : collAllReduce(in.data(), out.data(), 40, collFloat, collSum, comm, nullptr);
    if (rc != collInvalidUsage) problems.push_back("different collectives not caught on rank " + std::to_string(rank));
    // A different root.
    rc = collBroadcast(in.data(), out.data(), 40, collFloat, rank == 1 ? 1 : 0, comm, nullptr);
    if (rc != collInvalidUsage) problems.push_back("different roots not caught on rank " + std::to_string(rank));
    return problems;
  });
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// Variable counts: arrays that differ are named, even where the sums agree (all-gather) or where
// one side expects nothing (all-to-all, which without COLL_CHECK waits for its deadline).
TEST(ConsistencyCheck, VariableCountsThatDifferAreReportedOnEveryRank) {
  ASSERT_NE(getenv("COLL_CHECK"), nullptr) << "run through ctest, which sets COLL_CHECK=1";
  auto failures = runAsThreads(3, [](collComm_t comm, int rank, int) {
    std::vector<std::string> problems;
    std::vector<float> in(64, 1.0f), out(64, 0.0f);
    auto expectRefused = [&](collResult_t rc, const char* fragment, const char* what) {
      const std::string message = collGetLastError(comm);
      if (rc != collInvalidUsage || message.find(fragment) == std::string::npos)
        problems.push_back("rank " + std::to_string(rank) + ": " + what + ": " + message);
    };
    // Rank 2 swaps two entries: the same sum, another split.
    std::vector<size_t> counts = {4, 6, 8}, displs = {0, 4, 10};
    if (rank == 2) counts = {6, 4, 8}, displs = {0, 6, 10};
    expectRefused(
        collAllGatherV(in.data(), counts[rank], out.data(), counts.data(), displs.data(), collFloat, comm, nullptr),
        "rank 2 passed recvcounts[0] = 6 but rank 0 passed 4", "all-gather");
    // Rank 0 sends rank 1 nothing, which rank 1 expects 2 elements of.
    std::vector<size_t> sendcounts = {2, 2, 2}, recvcounts = {2, 2, 2}, at = {0, 2, 4};
    if (rank == 0) sendcounts[1] = 0;
    expectRefused(collAllToAllV(in.data(), sendcounts.data(), at.data(), out.data(), recvcounts.data(), at.data(),
                                collFloat, comm, nullptr),
                  "rank 0 sends rank 1 0 elements", "all-to-all");
    if (out[0] != 0.0f) problems.push_back("output written despite the mismatch");
    // Agreeing arrays work afterwards.
    sendcounts = {2, 2, 2};
    if (collAllToAllV(in.data(), sendcounts.data(), at.data(), out.data(), recvcounts.data(), at.data(), collFloat,
                      comm, nullptr) != collSuccess ||
        out[5] != 1.0f)
      problems.push_back("rank " + std::to_string(rank) + ": communicator broken after the check");
    return problems;
  });
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace colltest
