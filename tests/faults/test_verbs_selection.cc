// Device, port and GID selection of the verbs transport (COLL_IB_HCA, COLL_IB_GID_INDEX) over the
// verbs emulator with two devices (COLL_VERBS_EMU_DEVICES=2; CMake sets COLL_TRANSPORTS=verbs and
// names the emulator): the second device carries the collectives when the first is left out, and
// a selection that matches nothing fails init on every rank naming the ports there are; each rank
// takes the device nearest its CPU binding, read from a made-up sysfs tree (fake_sysfs.h).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

#include <functional>
#include <string>
#include <vector>

#include "collective.h"
#include "fake_sysfs.h"
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
  auto failures = initFailsWith(2,
                                [](int) {
                                  setenv("COLL_VERBS_EMU_DEVICES", "2", 1);
                                  setenv("COLL_IB_HCA", "mlx5_0:1", 1);
                                  setenv("COLL_TIMEOUT_MS", "20000", 1);
                                },
                                {"COLL_IB_HCA", "emu0:1", "emu1:1"});
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST(VerbsSelection, GidIndexThePortLacksFailsInit) {
  auto failures = initFailsWith(2,
                                [](int) {
                                  setenv("COLL_IB_GID_INDEX", "7", 1);
                                  setenv("COLL_TIMEOUT_MS", "20000", 1);
                                },
                                {"COLL_IB_GID_INDEX=7"});
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// The emulator's count of this process's protection domains on device `index` (the device the
// rank's transport opened); -1 when the emulator cannot be asked.
int pdsOnEmulatedDevice(int index) {
  const char* library = getenv("COLL_VERBS_LIBRARY");
  void* handle = library != nullptr ? dlopen(library, RTLD_NOW | RTLD_LOCAL) : nullptr;
  auto count = handle != nullptr ? reinterpret_cast<int (*)(int)>(dlsym(handle, "coll_verbs_emu_pds_on")) : nullptr;
  return count != nullptr ? count(index) : -1;
}

TEST(VerbsSelection, EachRankTakesTheDeviceNearestItsCpus) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs to bind two ranks apart";
  // emu0 is local to the second CPU (its local_cpulist), emu1 to the first (no local_cpulist: its
  // NUMA node's CPUs). Rank r binds to CPU r, so each must take the device that is not first in
  // the list's order for one of them: rank 0 emu1, rank 1 emu0.
  verbstest::FakeSysfs sysfs;
  sysfs.addNode(0, std::to_string(cpus[1]));
  sysfs.addNode(1, std::to_string(cpus[0]));
  sysfs.addDevice("emu0", "0000:00:01.0", "0000:01:00.0", 0, std::to_string(cpus[1]));
  sysfs.addDevice("emu1", "0000:80:01.0", "0000:81:00.0", 1, "");
  const std::string root = sysfs.root();
  auto failures = runAsProcessesWithSetup(
      2,
      [&cpus, root](int rank) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[rank], &one);
        sched_setaffinity(0, sizeof(one), &one);
        setenv("COLL_VERBS_EMU_DEVICES", "2", 1);
        setenv("COLL_VERBS_EMU_SYSFS", root.c_str(), 1);
        setenv("COLL_TIMEOUT_MS", "30000", 1);
      },
      [](collComm_t comm, int rank, int nranks) {
        std::vector<std::string> out = allReduceChecks(comm, rank, nranks);
        const int nearest = rank == 0 ? 1 : 0;
        const int onNearest = pdsOnEmulatedDevice(nearest), onOther = pdsOnEmulatedDevice(1 - nearest);
        if (onNearest != 1 || onOther != 0)
          out.push_back("rank " + std::to_string(rank) + ": PDs on emu" + std::to_string(nearest) + " (nearest) " +
                        std::to_string(onNearest) + ", on emu" + std::to_string(1 - nearest) + " " +
                        std::to_string(onOther) + "; expected 1 and 0");
        return out;
      },
      initMustSucceed(), 90);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace colltest
