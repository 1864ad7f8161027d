// Ranks whose planning settings differ would plan different algorithms and wait on each other
// forever; init refuses them with collInvalidUsage on every rank. Each child process sets its
// own environment before the library first reads it, so this test has its own binary (the
// parent must not read the parameters: it only makes the unique id).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <functional>

#include <string>
#include <vector>

#include "collective.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

TEST(SettingsMismatch, DifferentAlgorithmOverridesAreRefusedAtInit) {
  auto failures = runAsProcessesWithSetup(
      2, [](int rank) { setenv("COLL_ALGO", rank == 0 ? "allreduce:ring" : "allreduce:tree", 1); },
      [](collComm_t, int rank, int) {
        return std::vector<std::string>{"rank " + std::to_string(rank) + ": init succeeded despite the mismatch"};
      },
      [](int rank, collResult_t rc, const std::string& message) -> std::vector<std::string> {
        if (rc != collInvalidUsage) return {"rank " + std::to_string(rank) + ": init returned " + std::to_string(rc)};
        if (message.find("COLL_ALGO") == std::string::npos)
          return {"rank " + std::to_string(rank) + ": message lacks the variable: " + message};
        return {};
      });
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace colltest

namespace colltest {
namespace {

// Init outcomes for 2 processes whose environment `setup` sets; every rank must get
// collInvalidUsage with a message containing `expected`.
std::vector<std::string> expectInitRefused(const std::function<void(int)>& setup, const std::string& expected) {
  return runAsProcessesWithSetup(
      2, setup,
      [](collComm_t, int rank, int) {
        return std::vector<std::string>{"rank " + std::to_string(rank) + ": init succeeded"};
      },
      [expected](int rank, collResult_t rc, const std::string& message) -> std::vector<std::string> {
        if (rc != collInvalidUsage || message.find(expected) == std::string::npos)
          return {"rank " + std::to_string(rank) + ": got " + std::to_string(rc) + ": " + message};
        return {};
      });
}

TEST(TransportChoice, RanksOnDifferentHostsAreRefusedWithoutANetworkTransport) {
  auto failures = expectInitRefused(
      [](int rank) {
        setenv("COLL_HOSTID", rank == 0 ? "host-a" : "host-b", 1);
        setenv("COLL_TRANSPORTS", "shm", 1);
      },
      "different hosts");
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST(TransportChoice, ExcludingEveryTransportLeavesNone) {
  auto failures = expectInitRefused([](int) { setenv("COLL_TRANSPORTS", "^shm,net", 1); }, "no transport connects");
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// Ranks that call themselves different hosts (COLL_HOSTID) connect over sockets, here on
// loopback since they share this machine, and compute correct results.
TEST(TransportChoice, RanksOnDifferentHostsConnectOverSockets) {
  auto failures = runAsProcessesWithSetup(
      3, [](int rank) { setenv("COLL_HOSTID", rank == 1 ? "host-b" : "host-a", 1); },
      [](collComm_t comm, int rank, int nranks) {
        std::vector<std::string> problems;
        std::vector<int32_t> data(1001);
        for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<int32_t>(i) * (rank + 1);
        if (collAllReduce(data.data(), data.data(), data.size(), collInt32, collSum, comm, nullptr) != collSuccess)
          problems.push_back("rank " + std::to_string(rank) + ": " + collGetLastError(comm));
        for (size_t i = 0; i < data.size() && problems.empty(); ++i)
          if (data[i] != static_cast<int32_t>(i) * nranks * (nranks + 1) / 2)
            problems.push_back("rank " + std::to_string(rank) + ": element " + std::to_string(i) + " is " +
                               std::to_string(data[i]));
        return problems;
      },
      initMustSucceed());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST(TransportChoice, UnknownTransportNameIsRefused) {
  auto failures = expectInitRefused([](int) { setenv("COLL_TRANSPORTS", "carrier-pigeon", 1); }, "carrier-pigeon");
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace colltest
