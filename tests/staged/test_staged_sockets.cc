// Staged domains over real host transports, ranks as threads: every collective on 2, 3 and 4 ranks
// with the calls handed to the proxies before the kernels run them (as a stream queues launches),
// so that the proxies run ahead into later calls; over sockets, and over shared memory (the
// carrier where GPUs of one host cannot reach each other). Host memory stands for pinned memory,
// and a host stand-in for the kernels (host_kernel.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/staged/staged_ranks.h"

namespace coll {
namespace staging_test {
namespace {

// Every collective of everyCollective(n), in batches handed over before their kernels run.
std::string runEveryCollective(StagedRank& me, int rank, int n) {
  const std::vector<StagedCase> cases = everyCollective(n);
  constexpr size_t kBatch = 4;
  for (size_t first = 0; first < cases.size(); first += kBatch) {
    const size_t end = std::min(cases.size(), first + kBatch);
    for (size_t i = first; i < end; ++i) me.enqueue(cases[i]);
    for (size_t i = first; i < end; ++i) {
      if (!me.runKernel(i, static_cast<unsigned>(i + 1))) {
        collResult_t code;
        return cases[i].describe() + ": rank " + std::to_string(rank) + "'s kernel stopped: " + me.error(&code);
      }
      const std::string wrong = me.check(i);
      if (!wrong.empty()) return wrong;
    }
  }
  me.domain().drain(deadlineAfter(std::chrono::seconds(60)));
  collResult_t code;
  const std::string error = me.error(&code);
  return code == collSuccess ? "" : "rank " + std::to_string(rank) + ": " + error;
}

class StagedOverSockets : public ::testing::TestWithParam<int> {};

TEST_P(StagedOverSockets, EveryCollectiveWithTheProxiesRunningAhead) {
  const int n = GetParam();
  StagedRankOptions options;
  const auto failures =
      runStagedThreads(n, options, [&](StagedRank& me, int r) { return runEveryCollective(me, r, n); });
  ASSERT_TRUE(failures.empty()) << failures.front();
}

TEST_P(StagedOverSockets, OverSharedMemoryToo) {
  const int n = GetParam();
  StagedRankOptions options;
  options.transports = "^p2p";  // shared memory carries the slices between ranks of one host
  if (getenv("COLL_STAGED_TEST_TRANSPORTS") != nullptr) GTEST_SKIP() << "the carrier is COLL_STAGED_TEST_TRANSPORTS's";
  const auto failures =
      runStagedThreads(n, options, [&](StagedRank& me, int r) { return runEveryCollective(me, r, n); });
  ASSERT_TRUE(failures.empty()) << failures.front();
}

INSTANTIATE_TEST_SUITE_P(Ranks, StagedOverSockets, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });

// Copy-then-reduce (COLL_STAGED_RECV=copy): each received slice goes through the domain's copy
// engine stand-in into a device slot, marked full only once copied, while frames keep arriving.
TEST(StagedOverSocketsShapes, ReceivedSlicesCopiedIntoDeviceMemory) {
  for (int n : {2, 3}) {
    StagedRankOptions options;
    options.copyReceive = true;
    const auto failures = runStagedThreads(n, options, [&](StagedRank& me, int r) -> std::string {
      for (int peer = 0; peer < n; ++peer) {
        const device::PeerChannels& c = me.domain().hostTable()[peer];
        if (peer != r && c.recvSlots == c.recv + me.domain().layout().dataBase())
          return "rank " + std::to_string(r) + "'s kernels would read rank " + std::to_string(peer) +
                 "'s slices from the pinned slots";
      }
      return runEveryCollective(me, r, n);
    });
    ASSERT_TRUE(failures.empty()) << n << " ranks: " << failures.front();
  }
}

// Large slots and deep FIFOs: few frames, each packing every lane of a slice.
TEST(StagedOverSocketsShapes, LargeFramesPackWholeSlices) {
  StagedRankOptions options;
  options.frameBytes = 4096;
  options.fifoDepth = 8;
  const auto failures =
      runStagedThreads(3, options, [&](StagedRank& me, int r) { return runEveryCollective(me, r, 3); });
  ASSERT_TRUE(failures.empty()) << failures.front();
}

}  // namespace
}  // namespace staging_test
}  // namespace coll
