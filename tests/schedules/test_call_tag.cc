// The call tag (src/call_tag.h) every slot, frame, one-shot input and direct-read offer carries:
// equal exactly for calls that match (the same collective, count and datatype; a send and a
// receive of the same bytes, whatever their datatypes), different for any other, and described
// in the words a mismatch's message uses. Point-to-point steps carry their own call's tag.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/call_tag.h"
#include "src/plan/planner.h"

namespace coll {
namespace {

CollCall callOf(CollType type, size_t count, collDataType_t datatype, size_t elemSize) {
  CollCall call;
  call.type = type;
  call.count = count;
  call.datatype = datatype;
  call.elemSize = elemSize;
  return call;
}

TEST(CallTag, EqualOnlyForTheSameCollectiveCountAndDatatype) {
  const CallTag tag = callTagOf(callOf(CollType::kAllReduce, 100000, collFloat32, 4));
  EXPECT_EQ(tag, callTagOf(callOf(CollType::kAllReduce, 100000, collFloat32, 4)));
  EXPECT_NE(tag, callTagOf(callOf(CollType::kAllReduce, 50000, collFloat32, 4)));
  EXPECT_NE(tag, callTagOf(callOf(CollType::kAllReduce, 100000, collFloat64, 8)));
  EXPECT_NE(tag, callTagOf(callOf(CollType::kAllReduce, 100000, collInt32, 4)));  // same bytes, another type
  EXPECT_NE(tag, callTagOf(callOf(CollType::kBroadcast, 100000, collFloat32, 4)));
  EXPECT_NE(tag, 0u);
  // The largest count validation lets through still has a tag of its own.
  const size_t largest = (size_t{1} << kCallTagSizeBits) - 1;
  EXPECT_NE(callTagOf(callOf(CollType::kGather, largest, collUint8, 1)),
            callTagOf(callOf(CollType::kGather, largest - 1, collUint8, 1)));
}

TEST(CallTag, ASendMeetsAReceiveOfTheSameBytes) {
  const CallTag send = callTagOf(callOf(CollType::kSend, 100000, collFloat32, 4));
  EXPECT_EQ(send, callTagOf(callOf(CollType::kRecv, 400000, collUint8, 1)));
  EXPECT_EQ(send, callTagOf(callOf(CollType::kRecv, 50000, collFloat64, 8)));
  EXPECT_NE(send, callTagOf(callOf(CollType::kRecv, 50000, collFloat32, 4)));
}

TEST(CallTag, MismatchMessagesNameBothCalls) {
  const CallTag root = callTagOf(callOf(CollType::kBroadcast, 100000, collFloat32, 4));
  const CallTag mine = callTagOf(callOf(CollType::kBroadcast, 50000, collFloat32, 4));
  const std::string text = describeTagMismatch(0, root, 1, mine);
  for (const char* word : {"rank 0", "this rank (1)", "Broadcast with count 100000 of float (400000 bytes)",
                           "count 50000 of float (200000 bytes)", "COLL_CHECK"})
    EXPECT_NE(text.find(word), std::string::npos) << word << " not in: " << text;
  const std::string p2p = describeTagMismatch(0, callTagOf(callOf(CollType::kSend, 100000, collFloat32, 4)), 1,
                                              callTagOf(callOf(CollType::kRecv, 50000, collFloat32, 4)));
  EXPECT_NE(p2p.find("sent 400000 bytes where this rank (1) receives 200000 bytes"), std::string::npos) << p2p;
  EXPECT_NE(describeCallTag(0).find("nothing"), std::string::npos);
  EXPECT_THROW(throwTagMismatch(0, root, 1, mine), CallMismatchError);
}

TEST(CallTag, PointToPointStepsCarryTheirCallsTags) {
  std::vector<CollCall> calls = {callOf(CollType::kSend, 10, collFloat32, 4), callOf(CollType::kRecv, 3, collInt64, 8),
                                 callOf(CollType::kSend, 0, collFloat32, 4)};
  const Schedule schedule = pointToPointSchedule(calls);
  ASSERT_EQ(schedule.steps.size(), 2u);  // the empty send moves nothing
  EXPECT_EQ(schedule.steps[0].tag, callTagOf(calls[0]));
  EXPECT_EQ(schedule.steps[1].tag, callTagOf(calls[1]));
}

}  // namespace
}  // namespace coll
