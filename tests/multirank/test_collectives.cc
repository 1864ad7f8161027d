// Every collective x type x op x count x root x in-place, on 1..8 ranks, as threads (through the
// TCP rendezvous store and through an in-memory store) and as processes, against the independent
// reference.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "collective_cases.h"
#include "rank_launcher.h"
#include "test_env.h"

namespace colltest {
namespace {

const bool kTestEnvironmentApplied = applyTestEnvironment();  // test_env.h

RankBody standardBody() {
  return
      [](collComm_t comm, int rank, int nranks) { return runCases(comm, rank, nranks, standardCases(nranks, false)); };
}

class CollectivesAsThreads : public ::testing::TestWithParam<int> {};
class CollectivesAsThreadsInMemory : public ::testing::TestWithParam<int> {};
class CollectivesAsProcesses : public ::testing::TestWithParam<int> {};

TEST_P(CollectivesAsThreads, AllCasesMatchReference) {
  auto failures = runAsThreads(GetParam(), standardBody());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST_P(CollectivesAsThreadsInMemory, AllCasesMatchReference) {
  auto failures = runAsThreadsWithMemoryStore(GetParam(), standardBody());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST_P(CollectivesAsProcesses, AllCasesMatchReference) {
  auto failures = runAsProcesses(GetParam(), standardBody());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// Ranks that call themselves two hosts (COLL_HOSTID, odd and even ranks): shared memory within
// each, sockets on loopback between them, so every algorithm mixes both transports and the rings
// run in host order, which here differs from rank order.
class CollectivesOnTwoSimulatedHosts : public ::testing::TestWithParam<int> {};

TEST_P(CollectivesOnTwoSimulatedHosts, AllCasesMatchReference) {
  auto failures = runAsProcessesWithSetup(
      GetParam(), [](int rank) { setenv("COLL_HOSTID", rank % 2 ? "odd-host" : "even-host", 1); }, standardBody(),
      initMustSucceed());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// More ranks than the host kernel's sources (kernels::kMaxReduceSources, 16): the one-shot path
// reduces in several passes, folding each pass's result into the output. In place, the output is
// the rank's own input, which the first pass overwrites, so the later passes must read the copy
// the rank published (OneShot::sourceOf). Reductions only, small counts (the one-shot path).
TEST(CollectivesAsThreads, ReductionsFoldedOverSeveralKernelPasses) {
  constexpr int kRanks = 18;
  std::vector<Case> cases;
  for (Coll coll : {Coll::kAllReduce, Coll::kReduce, Coll::kReduceScatter})
    for (collDataType_t type : {collFloat32, collInt32})
      for (collRedOp_t op : {collSum, collProd, collMax, collAvg})
        for (size_t count : {1, 7})
          for (int root : {0, kRanks - 1})
            for (bool inPlace : {false, true}) {
              if (coll != Coll::kReduce && root != 0) continue;
              cases.push_back({coll, type, op, count, root, inPlace});
            }
  auto failures =
      runAsThreads(kRanks, [&](collComm_t comm, int rank, int nranks) { return runCases(comm, rank, nranks, cases); });
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

std::string rankCountName(const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param) + "ranks"; }

INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesAsThreads, ::testing::Range(1, 9), rankCountName);
INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesAsThreadsInMemory, ::testing::Values(2, 5, 8), rankCountName);
INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesAsProcesses, ::testing::Range(1, 9), rankCountName);
INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesOnTwoSimulatedHosts, ::testing::Values(2, 3, 5), rankCountName);

}  // namespace
}  // namespace colltest
