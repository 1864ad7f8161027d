// The direct all-reduce's host side (kernels/cuda/direct_share.h, src/plan/device_program.h): how
// the call is cut among ranks and blocks, where its line sits in a connection's memory, and when
// the planner takes it. The kernel itself runs only on a GPU (tests/cuda, --algo allreduce:cma).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/cuda/channel_layout.h"
#include "kernels/cuda/direct_share.h"
#include "src/plan/device_program.h"
#include "tests/common/expect_coll_error.h"

namespace coll {
namespace {

TEST(DirectShare, EveryElementOnceInAlignedShares) {
  for (uint32_t elemSize : {1u, 2u, 4u, 8u})
    for (uint32_t nranks = 2; nranks <= 8; ++nranks)
      for (uint32_t blocks : {1u, 3u, 16u})
        for (uint64_t count : {0ull, 1ull, 2ull, 7ull, 15ull, 16ull, 17ull, 127ull, 4099ull, 65537ull, 2400001ull}) {
          std::vector<uint8_t> seen(count, 0);
          for (uint32_t rank = 0; rank < nranks; ++rank)
            for (uint32_t block = 0; block < blocks; ++block) {
              const device::DirectShare s = device::directShare(count, elemSize, rank, nranks, block, blocks);
              ASSERT_LE(s.begin, s.end);
              ASSERT_LE(s.end, count);
              if (s.end > s.begin) {
                ASSERT_EQ(s.begin * elemSize % 16, 0u) << "share start not 16-byte aligned";
              }
              for (uint64_t i = s.begin; i < s.end; ++i) ++seen[i];
            }
          for (uint64_t i = 0; i < count; ++i)
            ASSERT_EQ(seen[i], 1) << "element " << i << " of " << count << " (" << elemSize << " B, " << nranks
                                  << " ranks, " << blocks << " blocks)";
        }
}

TEST(DirectShare, LargeCallsKeepEveryBlockBusy) {
  // 256 MiB of floats on 4 ranks: every block of every rank gets work, within a pack of the others.
  const uint64_t count = (256ull << 20) / 4;
  for (uint32_t rank = 0; rank < 4; ++rank)
    for (uint32_t block = 0; block < device::kDirectBlocks; ++block) {
      const device::DirectShare s = device::directShare(count, 4, rank, 4, block, device::kDirectBlocks);
      EXPECT_NEAR(double(s.end - s.begin), double(count) / 4 / device::kDirectBlocks, 4.0);
    }
}

TEST(DirectLayout, TheLineSitsBetweenTheCreditsAndTheSlots) {
  EXPECT_GE(device::directLineOffset(), device::llCreditOffset(0) + device::kFlagLineBytes);
  EXPECT_LE(device::directLineOffset() + device::kFlagLineBytes, device::simpleDataBase());
  EXPECT_EQ(device::directLineOffset() % device::kFlagLineBytes, 0u);
  EXPECT_LE(device::kDirectBlocks, device::kSimpleGeometry.lanes);
}

CollCall allReduce(size_t count, collRedOp_t op = collSum) {
  CollCall c;
  c.type = CollType::kAllReduce;
  c.count = count;
  c.elemSize = 4;
  c.datatype = collFloat32;
  c.op = op;
  return c;
}

struct DirectContext {
  Algo overrides[static_cast<int>(CollType::kCount)] = {};
  DeviceCallContext context;
  explicit DirectContext(bool forceCma, bool shared = true, DeviceMode mode = DeviceMode::kConcurrent, int n = 4) {
    if (forceCma) overrides[static_cast<int>(CollType::kAllReduce)] = Algo::kDirectRead;
    context.rank = 1;
    context.nranks = n;
    context.mode = mode;
    context.overrides = overrides;
    context.sharedAddressSpace = shared;
  }
};

TEST(DirectPlan, CmaOnThreadsOfOneProcessIsTheDirectKernel) {
  DirectContext d(true);
  const DeviceProgram p = planDeviceCall(allReduce(1000003), d.context);
  EXPECT_TRUE(p.direct);
  EXPECT_EQ(p.algorithm, "cma");
  EXPECT_EQ(p.count, 1000003u);
  EXPECT_EQ(p.avgDivisor, 0);
  EXPECT_TRUE(p.launches.empty());
  EXPECT_EQ(planDeviceCall(allReduce(5, collAvg), d.context).avgDivisor, 4);
}

TEST(DirectPlan, UnforcedThreadRanksTakeTheDirectKernelFrom128Bytes) {
  DirectContext d(false);
  for (size_t count : {size_t(32), size_t(4099), size_t(1000003)}) {
    const DeviceProgram p = planDeviceCall(allReduce(count), d.context);
    EXPECT_TRUE(p.direct) << count;
    EXPECT_EQ(p.count, count);
  }
  // 124 B: the ring's LL protocol answers sooner.
  const DeviceProgram small = planDeviceCall(allReduce(kDirectAllReduceSmallestBytes / 4 - 1), d.context);
  EXPECT_FALSE(small.direct);
  EXPECT_FALSE(small.launches.empty());
}

TEST(DirectPlan, AForcedAlgorithmOrProtocolKeepsTheRing) {
  DirectContext ring(false);
  ring.overrides[static_cast<int>(CollType::kAllReduce)] = Algo::kRing;
  EXPECT_FALSE(planDeviceCall(allReduce(1000003), ring.context).direct);
  for (ProtoChoice proto : {ProtoChoice::kLL, ProtoChoice::kSimple}) {
    DirectContext d(false);
    d.context.forced = proto;
    EXPECT_FALSE(planDeviceCall(allReduce(1000003), d.context).direct);
  }
}

TEST(DirectPlan, RanksOutsideOneAddressSpaceOrSerializedNeverTakeItUnasked) {
  for (const DirectContext& d : {DirectContext(false, false), DirectContext(false, true, DeviceMode::kSerialized),
                                 DirectContext(false, true, DeviceMode::kConcurrent, 9)}) {
    const DeviceProgram p = planDeviceCall(allReduce(1000003), d.context);
    EXPECT_FALSE(p.direct);
    EXPECT_FALSE(p.launches.empty());
  }
}

// Rank processes under MPS whose call buffers the channels map: the direct kernel when forced
// (each call exchanges the buffers through host memory first), the ring otherwise.
TEST(DirectPlan, RankProcessesWithMappedBuffersTakeItOnlyWhenForced) {
  DirectContext forced(true, false), unforced(false, false);
  forced.context.callBuffersMapped = unforced.context.callBuffersMapped = true;
  const DeviceProgram p = planDeviceCall(allReduce(1000003), forced.context);
  EXPECT_TRUE(p.direct);
  EXPECT_EQ(p.count, 1000003u);
  EXPECT_FALSE(planDeviceCall(allReduce(1000003), unforced.context).direct);
  // Serialized kernels cannot meet, mapped or not.
  DirectContext serialized(true, false, DeviceMode::kSerialized);
  serialized.context.callBuffersMapped = true;
  EXPECT_THROW(planDeviceCall(allReduce(1000003), serialized.context), CollError);
}

TEST(DirectPlan, MappedBuffersAreNotCapturedInAGraph) {
  // A graph would replay the addresses of one call's mappings, which the cache may close later.
  DirectContext processes(true, false);
  processes.context.callBuffersMapped = true;
  processes.context.capturing = true;
  const std::string message =
      colltest::expectCollError(collInvalidUsage, [&] { planDeviceCall(allReduce(1000003), processes.context); });
  EXPECT_NE(message.find("outside a CUDA graph capture"), std::string::npos) << message;
  // Threads of one process share addresses: a capture changes nothing for them.
  DirectContext threads(true, true);
  threads.context.capturing = true;
  EXPECT_TRUE(planDeviceCall(allReduce(1000003), threads.context).direct);
}

TEST(DirectPlan, CmaWhereTheDirectKernelCannotRunIsAClearError) {
  for (const DirectContext& d : {DirectContext(true, false), DirectContext(true, true, DeviceMode::kSerialized),
                                 DirectContext(true, true, DeviceMode::kConcurrent, 9)}) {
    const std::string message =
        colltest::expectCollError(collInvalidUsage, [&] { planDeviceCall(allReduce(1000003), d.context); });
    EXPECT_NE(message.find("cma on device memory"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace coll
