// Every collective x type x op x count x root x in-place, on 1..8 ranks, as threads (through the
// TCP rendezvous store and through an in-memory store) and as processes, against the independent
// reference.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "collective_cases.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

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

std::string rankCountName(const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param) + "ranks"; }

INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesAsThreads, ::testing::Range(1, 9), rankCountName);
INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesAsThreadsInMemory, ::testing::Values(2, 5, 8), rankCountName);
INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesAsProcesses, ::testing::Range(1, 9), rankCountName);
INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesOnTwoSimulatedHosts, ::testing::Values(2, 3, 5), rankCountName);

}  // namespace
}  // namespace colltest
