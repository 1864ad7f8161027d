// Every collective x type x op x count x root x in-place, on 1..8 ranks, as threads and as
// processes, against the independent reference.
#include <gtest/gtest.h>

#include "collective_cases.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return text;
}

RankBody standardBody() {
  return [](collComm_t comm, int rank, int nranks) { return runCases(comm, rank, nranks, standardCases(nranks, false)); };
}

class CollectivesAsThreads : public ::testing::TestWithParam<int> {};
class CollectivesAsProcesses : public ::testing::TestWithParam<int> {};

TEST_P(CollectivesAsThreads, AllCasesMatchReference) {
  auto failures = runAsThreads(GetParam(), standardBody());
  EXPECT_TRUE(failures.empty()) << joined(failures);
}

TEST_P(CollectivesAsProcesses, AllCasesMatchReference) {
  auto failures = runAsProcesses(GetParam(), standardBody());
  EXPECT_TRUE(failures.empty()) << joined(failures);
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesAsThreads, ::testing::Range(1, 9));
INSTANTIATE_TEST_SUITE_P(Ranks, CollectivesAsProcesses, ::testing::Range(1, 9));

}  // namespace
}  // namespace colltest
