// The device protocol choice (src/plan/protocol.h) and COLL_PROTO's parsing (src/params.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "src/params.h"
#include "src/plan/protocol.h"

namespace coll {
namespace {

CollCall call(CollType type, size_t count, size_t elemSize) {
  CollCall c;
  c.type = type;
  c.count = count;
  c.elemSize = elemSize;
  c.datatype = elemSize == 4 ? collFloat32 : collUint8;
  return c;
}

TEST(DeviceProtocol, SmallMessagesTakeLLLargeOnesSimple) {
  using device::Protocol;
  EXPECT_EQ(chooseProtocol(call(CollType::kAllReduce, 1, 4), 4, true, ProtoChoice::kAuto), Protocol::kLL);
  EXPECT_EQ(chooseProtocol(call(CollType::kAllReduce, kLLMaxBytes / 4, 4), 4, true, ProtoChoice::kAuto), Protocol::kLL);
  EXPECT_EQ(chooseProtocol(call(CollType::kAllReduce, kLLMaxBytes / 4 + 1, 4), 4, true, ProtoChoice::kAuto),
            Protocol::kSimple);
  EXPECT_EQ(chooseProtocol(call(CollType::kAllReduce, 64 << 20, 4), 4, true, ProtoChoice::kAuto), Protocol::kSimple);
  // Zero-byte calls and barriers are latency-bound.
  EXPECT_EQ(chooseProtocol(call(CollType::kAllReduce, 0, 4), 4, true, ProtoChoice::kAuto), Protocol::kLL);
  EXPECT_EQ(chooseProtocol(call(CollType::kBarrier, 0, 1), 8, true, ProtoChoice::kAuto), Protocol::kLL);
}

TEST(DeviceProtocol, GatherLikeCallsCountTheWholeBuffer) {
  // 8 ranks x 16 KiB: the all-gather's output is 128 KiB, past LL's limit.
  const size_t per = (16 << 10) / 4;
  EXPECT_EQ(deviceCallBytes(call(CollType::kAllGather, per, 4), 8), size_t(128) << 10);
  EXPECT_EQ(deviceCallBytes(call(CollType::kAllReduce, per, 4), 8), size_t(16) << 10);
  EXPECT_EQ(chooseProtocol(call(CollType::kAllGather, per, 4), 8, true, ProtoChoice::kAuto), device::Protocol::kSimple);
  EXPECT_EQ(chooseProtocol(call(CollType::kAllReduce, per, 4), 8, true, ProtoChoice::kAuto), device::Protocol::kLL);
}

TEST(DeviceProtocol, EveryCollectiveCountsItsLargestBuffer) {
  // Written out per collective, apart from the table the code reads: a block per rank for the
  // gather-like calls, one block for the others, nothing for the barrier.
  const std::vector<std::pair<CollType, size_t>> blocks = {
      {CollType::kAllReduce, 1},      {CollType::kBroadcast, 1}, {CollType::kReduce, 1},  {CollType::kAllGather, 8},
      {CollType::kReduceScatter, 8},  {CollType::kGather, 8},    {CollType::kScatter, 8}, {CollType::kAllToAll, 8},
      {CollType::kBarrier, 0},        {CollType::kSend, 1},      {CollType::kRecv, 1},    {CollType::kAllGatherV, 1},
      {CollType::kReduceScatterV, 1}, {CollType::kAllToAllV, 1}};
  EXPECT_EQ(blocks.size(), static_cast<size_t>(CollType::kCount));
  for (const auto& [type, multiple] : blocks)
    EXPECT_EQ(deviceCallBytes(call(type, 100, 4), 8), 400 * multiple) << static_cast<int>(type);
}

TEST(DeviceProtocol, VariableCountCallsChooseWhatEveryRankChooses) {
  // An all-gather's or reduce-scatter's count is the sum every rank agrees on; an all-to-all's
  // ranks agree on no size (its count is 0 on every rank), so it takes Simple whatever it moves.
  EXPECT_EQ(chooseProtocol(call(CollType::kAllGatherV, 100, 4), 8, true, ProtoChoice::kAuto), device::Protocol::kLL);
  EXPECT_EQ(chooseProtocol(call(CollType::kReduceScatterV, 1 << 20, 4), 8, true, ProtoChoice::kAuto),
            device::Protocol::kSimple);
  EXPECT_EQ(deviceCallBytes(call(CollType::kAllToAllV, 0, 4), 8), SIZE_MAX);
  EXPECT_EQ(chooseProtocol(call(CollType::kAllToAllV, 0, 4), 8, true, ProtoChoice::kAuto), device::Protocol::kSimple);
  EXPECT_EQ(chooseProtocol(call(CollType::kAllToAllV, 0, 4), 8, true, ProtoChoice::kLL), device::Protocol::kLL);
}

TEST(DeviceProtocol, ByteTransfersFollowTheSameLimit) {
  EXPECT_EQ(chooseProtocolOfBytes(kLLMaxBytes, true, ProtoChoice::kAuto), device::Protocol::kLL);
  EXPECT_EQ(chooseProtocolOfBytes(kLLMaxBytes + 1, true, ProtoChoice::kAuto), device::Protocol::kSimple);
  EXPECT_EQ(chooseProtocolOfBytes(1, false, ProtoChoice::kLL), device::Protocol::kSimple);
}

TEST(DeviceProtocol, CollProtoOverridesTheSize) {
  EXPECT_EQ(chooseProtocol(call(CollType::kAllReduce, 64 << 20, 4), 4, true, ProtoChoice::kLL), device::Protocol::kLL);
  EXPECT_EQ(chooseProtocol(call(CollType::kAllReduce, 1, 4), 4, true, ProtoChoice::kSimple), device::Protocol::kSimple);
}

TEST(DeviceProtocol, SerializedModeAlwaysUsesSimple) {
  // Without concurrent kernels the stream waits on Simple's ready flags; LL has none.
  for (ProtoChoice forced : {ProtoChoice::kAuto, ProtoChoice::kLL, ProtoChoice::kSimple})
    EXPECT_EQ(chooseProtocol(call(CollType::kAllReduce, 1, 4), 4, false, forced), device::Protocol::kSimple);
}

TEST(DeviceProtocol, ParsesCollProto) {
  EXPECT_EQ(parseProtoChoice("LL"), ProtoChoice::kLL);
  EXPECT_EQ(parseProtoChoice("ll"), ProtoChoice::kLL);
  EXPECT_EQ(parseProtoChoice("Simple"), ProtoChoice::kSimple);
  EXPECT_EQ(parseProtoChoice("SIMPLE"), ProtoChoice::kSimple);
  EXPECT_EQ(parseProtoChoice("auto"), ProtoChoice::kAuto);
  try {
    parseProtoChoice("LL128");
    FAIL() << "LL128 accepted";
  } catch (const CollError& e) {
    EXPECT_EQ(e.code(), collInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("COLL_PROTO"), std::string::npos) << e.what();
  }
}

TEST(DeviceProtocol, CollProtoIsAPlanningSetting) {
  // Ranks that disagree on COLL_PROTO would cut connections differently: init compares the shared
  // settings' digests, refuses them and names the variable.
  Params a, b;
  b.protocol = ProtoChoice::kLL;
  const std::vector<SharedSetting> mine = sharedSettings(a), theirs = sharedSettings(b);
  ASSERT_EQ(mine.size(), theirs.size());
  std::vector<std::string> differing;
  for (size_t i = 0; i < mine.size(); ++i)
    if (mine[i].digest != theirs[i].digest) differing.push_back(mine[i].name);
  EXPECT_EQ(differing, std::vector<std::string>{"COLL_PROTO"});
}

}  // namespace
}  // namespace coll
