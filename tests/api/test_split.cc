// collCommSplit: MPI_Comm_split semantics, and the child communicators work on their own.
#include <gtest/gtest.h>

#include "collective.h"
#include "collective_cases.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

TEST(Split, ByParityWithReversedKeys) {
  const int nranks = 5;
  auto failures = runAsThreads(nranks, [](collComm_t comm, int rank, int nranks) {
    std::vector<std::string> problems;
    collComm_t child = nullptr;
    int color = rank == 4 ? COLL_SPLIT_NOCOLOR : rank % 2;
    if (collCommSplit(comm, color, -rank, &child, nullptr) != collSuccess)
      return std::vector<std::string>{"split: " + std::string(collGetLastError(comm))};
    if (color == COLL_SPLIT_NOCOLOR) {
      if (child != nullptr) problems.push_back("NOCOLOR rank got a communicator");
    } else {
      int size = 0, newRank = -1;
      collCommCount(child, &size);
      collCommUserRank(child, &newRank);
      // Even ranks 0, 2 (4 opted out); odd ranks 1, 3; keys reverse the order.
      int expectedSize = 2;
      int expectedRank = (color == 0) ? (rank == 2 ? 0 : 1) : (rank == 3 ? 0 : 1);
      if (size != expectedSize || newRank != expectedRank)
        problems.push_back("rank " + std::to_string(rank) + " got " + std::to_string(newRank) + "/" +
                           std::to_string(size));
      auto cases = standardCases(size, false);
      cases.resize(200);
      auto childProblems = runCases(child, newRank, size, cases);
      problems.insert(problems.end(), childProblems.begin(), childProblems.end());
      collCommDestroy(child);
    }
    // The parent still works after the split.
    std::string after = runCase(comm, rank, nranks, {Coll::kAllReduce, collFloat, collSum, 9, 0, false});
    if (!after.empty()) problems.push_back("parent after split: " + after);
    return problems;
  });
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace colltest
