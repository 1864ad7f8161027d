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

}  // namespace
}  // namespace colltest
