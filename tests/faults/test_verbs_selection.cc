// Device, port and GID selection of the verbs transport (COLL_IB_HCA, COLL_IB_GID_INDEX) over the
// verbs emulator with two devices (COLL_VERBS_EMU_DEVICES=2; CMake sets COLL_TRANSPORTS=verbs and
// names the emulator): the second device carries the collectives when the first is left out, and
// a selection that matches nothing fails init on every rank naming the ports there are.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <functional>
#include <string>
#include <vector>

#include "collective.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

std::vector<std::string> allReduceChecks(collComm_t comm, int rank, int nranks) {
  std::vector<float> data(50000, static_cast<float>(rank + 1));
  const collResult_t rc = collAllReduce(data.data(), data.data(), data.size(), collFloat, collSum, comm, nullptr);
  if (rc != collSuccess) return {"rank " + std::to_string(rank) + ": " + collGetLastError(comm)};
  const float want = static_cast<float>(nranks * (nranks + 1) / 2);
  for (float v : data)
    if (v != want) return {"rank " + std::to_string(rank) + ": got " + std::to_string(v)};
  return {};
}

// Init must fail on every one of `nranks` ranks with collInvalidUsage and a message holding every
// one of `wanted`, once `setup` ran in each.
std::vector<std::string> initFailsWith(int nranks, const std::function<void(int)>& setup,
                                       const std::vector<std::string>& wanted) {
  return runAsProcessesWithSetup(
      nranks, setup,
      [](collComm_t, int rank, int) -> std::vector<std::string> {
        return {"rank " + std::to_string(rank) + ": init succeeded"};
      },
      [wanted](int rank, collResult_t rc, const std::string& message) -> std::vector<std::string> {
        bool named = true;
        for (const std::string& w : wanted) named = named && message.find(w) != std::string::npos;
        if (rc == collInvalidUsage && named) return {};
        return {"rank " + std::to_string(rank) + ": " + collGetErrorString(rc) + ": " + message};
      },
      60);
}

TEST(VerbsSelection, SecondEmulatedDeviceCarriesTheCollectives) {
  // emu0 left out entirely: only emu1 remains, and its RoCE-v2-form GID (index 1).
  auto failures = runAsProcessesWithSetup(
      3,
      [](int) {
        setenv("COLL_VERBS_EMU_DEVICES", "2", 1);
        setenv("COLL_IB_HCA", "^=emu0", 1);
        setenv("COLL_IB_GID_INDEX", "1", 1);
        setenv("COLL_TIMEOUT_MS", "30000", 1);
      },
      allReduceChecks, initMustSucceed(), 90);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST(VerbsSelection, SelectionMatchingNothingFailsInitNamingThePorts) {
  auto failures = initFailsWith(
      2,
      [](int) {
        setenv("COLL_VERBS_EMU_DEVICES", "2", 1);
        setenv("COLL_IB_HCA", "mlx5_0:1", 1);
        setenv("COLL_TIMEOUT_MS", "20000", 1);
      },
      {"COLL_IB_HCA", "emu0:1", "emu1:1"});
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST(VerbsSelection, GidIndexThePortLacksFailsInit) {
  auto failures = initFailsWith(
      2,
      [](int) {
        setenv("COLL_IB_GID_INDEX", "7", 1);
        setenv("COLL_TIMEOUT_MS", "20000", 1);
      },
      {"COLL_IB_GID_INDEX=7"});
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace colltest
