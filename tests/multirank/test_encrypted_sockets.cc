// COLL_NET_ENCRYPT=1 end to end, ranks as processes over sockets alone (COLL_TRANSPORTS=net):
// every collective's standard cases match the reference with every frame sealed, as they do in
// plaintext; and ranks that differ on the setting are refused at init, every one of them, with a
// message that names the setting and both values. Each child sets its environment before the
// library reads it, so this test has its own binary.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "collective.h"
#include "collective_cases.h"
#include "rank_launcher.h"
#include "src/api_internal.h"
#include "src/comm.h"

namespace colltest {
namespace {

std::vector<std::string> overSockets(collComm_t comm, int rank) {
  const std::string addresses = coll::communicatorOf(comm)->addresses();
  if (addresses.find("net ") == std::string::npos)
    return {"rank " + std::to_string(rank) + ": no socket transport in " + addresses};
  return {};
}

class EncryptedSockets : public ::testing::TestWithParam<int> {};

TEST_P(EncryptedSockets, EveryCollectiveMatchesTheReference) {
  auto failures = runAsProcessesWithSetup(
      GetParam(),
      [](int) {
        setenv("COLL_NET_ENCRYPT", "1", 1);
        setenv("COLL_TRANSPORTS", "net", 1);
      },
      [](collComm_t comm, int rank, int nranks) {
        std::vector<std::string> failures = overSockets(comm, rank);
        for (std::string& f : runCases(comm, rank, nranks, standardCases(nranks, false))) failures.push_back(f);
        return failures;
      },
      initMustSucceed(), 300);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

INSTANTIATE_TEST_SUITE_P(Ranks, EncryptedSockets, ::testing::Values(2, 3),
                         [](const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param); });

TEST(EncryptionMismatch, ASettingOnOneSideOnlyIsRefusedAtInitOnEveryRank) {
  auto failures = runAsProcessesWithSetup(
      2,
      [](int rank) {
        setenv("COLL_NET_ENCRYPT", rank == 0 ? "1" : "0", 1);
        setenv("COLL_TRANSPORTS", "net", 1);
      },
      [](collComm_t, int rank, int) {
        return std::vector<std::string>{"rank " + std::to_string(rank) + ": init succeeded despite the mismatch"};
      },
      [](int rank, collResult_t rc, const std::string& message) -> std::vector<std::string> {
        const std::string me = "rank " + std::to_string(rank);
        const std::string expected = rank == 0 ? "COLL_NET_ENCRYPT is 0 on rank 1 and 1 on rank 0"
                                               : "COLL_NET_ENCRYPT is 1 on rank 0 and 0 on rank 1";
        if (rc != collInvalidUsage) return {me + ": init returned " + std::to_string(rc) + ": " + message};
        if (message.find(expected) == std::string::npos)
          return {me + ": the message lacks '" + expected + "': " + message};
        return {};
      });
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace colltest
