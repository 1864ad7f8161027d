// Counts and datatypes that differ between ranks, without COLL_CHECK (mismatch_cases.h): on every
// path a byte can take (one-shot inputs, direct reads, shared-memory FIFO slots and single
// copies, sockets, verbs over the emulator), nothing lands outside a buffer and every rank fails
// with a message naming both counts. Ranks are processes, two of them (the cases) and
// three (per-peer blocks, and a host boundary between simulated hosts), and threads.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <sstream>
#include <string>
#include <vector>

#include "mismatch_cases.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

struct Setting {
  const char* name;
  // NAME=VALUE pairs set in each rank before init.
  const char* env;
  // Whether every rank shares one host's memory: then a rank whose count is zero is detected
  // too (its peers read its call's record; across hosts it sends nothing to be checked).
  bool oneHost;
  // Rank 0 on one simulated host (COLL_HOSTID), the others on another.
  bool twoHosts = false;
};

void applyEnvironment(const char* env) {
  std::istringstream in(env);
  std::string item;
  while (in >> item) {
    const size_t eq = item.find('=');
    setenv(item.substr(0, eq).c_str(), item.substr(eq + 1).c_str(), 1);
  }
}

void applySettings(const Setting& setting, int rank) {
  if (setting.twoHosts) setenv("COLL_HOSTID", rank == 0 ? "host-a" : "host-b", 1);
  applyEnvironment(setting.env);
}


// Runs the cases on `nranks` processes with the setting; the problems.
std::vector<std::string> runSetting(const Setting& setting, int nranks, const std::vector<MismatchCase>& cases) {
  return runAsProcessesWithSetup(
      nranks, [&](int rank) { applySettings(setting, rank); },
      [&](collComm_t comm, int rank, int n) { return runMismatches(comm, rank, n, cases); }, initMustSucceed(), 600);
}

class Mismatch : public ::testing::TestWithParam<Setting> {};

TEST_P(Mismatch, TwoRanksFailWithoutWritingPastABuffer) {
  auto failures = runSetting(GetParam(), 2, mismatchCases(GetParam().oneHost));
  EXPECT_TRUE(failures.empty()) << failures.size() << " problems:\n" << joinFailures(failures);
}

// Three ranks, rank 0 against two that agree: each peer's block of a gather, scatter or
// all-to-all, and a rank that learns of the mismatch only from another's failure.
TEST_P(Mismatch, ThreeRanksFailWithoutWritingPastABuffer) {
  std::vector<MismatchCase> cases;
  for (const MismatchCase& c : mismatchCases(GetParam().oneHost))
    if (c.ranks[0].count == 100000 || c.ranks[1].count == 1 || c.ranks[1].count == 0) cases.push_back(c);
  auto failures = runSetting(GetParam(), 3, cases);
  EXPECT_TRUE(failures.empty()) << failures.size() << " problems:\n" << joinFailures(failures);
}

// Ranks that are threads of one process (direct reads between threads copy with memcpy), with
// the default plans.
TEST(MismatchAsThreads, TwoRanksFailWithoutWritingPastABuffer) {
  const std::vector<MismatchCase> cases = mismatchCases(/*zeroCounts=*/true);
  auto failures =
      runAsThreads(2, [&](collComm_t comm, int rank, int nranks) { return runMismatches(comm, rank, nranks, cases); });
  EXPECT_TRUE(failures.empty()) << failures.size() << " problems:\n" << joinFailures(failures);
}

INSTANTIATE_TEST_SUITE_P(
    Paths, Mismatch,
    ::testing::Values(
        // The default plans: one-shot inputs, direct reads from 32 KiB on two ranks, FIFOs between.
        Setting{"planned", "", true},
        // Direct reads wherever they can run.
        Setting{"directReads", "COLL_DIRECT_READ_BYTES=64 COLL_ONESHOT_BYTES=64", true},
        // Shared-memory FIFOs only, in small slots; point-to-point by single copy or not at all.
        Setting{"fifo", "COLL_DIRECT_READ_BYTES=0 COLL_ONESHOT_BYTES=64 COLL_SHM_SLOT_BYTES=4096 COLL_SHM_FIFO_DEPTH=2",
                true},
        Setting{"fifoNoSingleCopy",
                "COLL_DIRECT_READ_BYTES=0 COLL_ONESHOT_BYTES=64 COLL_SHM_SINGLE_COPY_BYTES=0 COLL_SHM_FIFO_DEPTH=2",
                true},
        Setting{"sockets", "COLL_TRANSPORTS=^shm", false},
        Setting{"socketSlices", "COLL_TRANSPORTS=^shm COLL_SHM_SLOT_BYTES=4096 COLL_NET_FIFO_DEPTH=2 COLL_SOCKET_NSOCKS=3",
                false},
        // Rank 0 on one simulated host, the others on another: sockets between them.
        Setting{"twoHosts", "", false, true},
        // IB verbs over the emulator (tests/verbs_emulator), with the library and the emulator's
        // registry named by ctest (CMakeLists.txt): through the slots, then every slice written
        // from the caller's buffer and, where the receiver offers it, into its buffer.
        Setting{"verbs", "COLL_TRANSPORTS=verbs", false},
        Setting{"verbsZeroCopy", "COLL_TRANSPORTS=verbs COLL_IB_ZCOPY_BYTES=1 COLL_SHM_SLOT_BYTES=4096", false}),
    [](const ::testing::TestParamInfo<Setting>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace colltest
