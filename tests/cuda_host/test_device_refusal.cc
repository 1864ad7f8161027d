// Device buffers where the library cannot run them: a call with a stream is refused with
// collInvalidUsage and a message naming the function, before anything is touched ("no CUDA
// device: ..." on a machine without a GPU); collCommCuDevice reports -1, and init made no CUDA
// context (a host-only user on a GPU machine pays nothing for the device path).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "bootstrap/memory_store.h"
#include "collective.h"
#include "common/cuda_device.h"
#include "src/api_internal.h"

namespace {

class DeviceRefusal : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = std::make_shared<coll::bootstrap::MemoryStore>();
    ASSERT_EQ(coll::commInitWithStore(&comm_, store, 1, 0, nullptr), collSuccess) << collGetLastError(nullptr);
  }
  void TearDown() override {
    if (comm_ != nullptr) collCommDestroy(comm_);
  }
  // A stream the library must never touch: the refusal comes first.
  collStream_t fakeStream() { return reinterpret_cast<collStream_t>(uintptr_t(0x10)); }
  collComm_t comm_ = nullptr;
};

std::string expectedReason() {
  std::string why;
  return coll::cudaDeviceAvailable(&why) ? "not yet connected" : "no CUDA device: ";
}

TEST_F(DeviceRefusal, EveryCollectiveWithAStreamIsRefusedByName) {
  float in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
  struct {
    const char* name;
    collResult_t rc;
  } calls[] = {
      {"collAllReduce", collAllReduce(in, out, 4, collFloat, collSum, comm_, fakeStream())},
      {"collBroadcast", collBroadcast(in, out, 4, collFloat, 0, comm_, fakeStream())},
      {"collReduce", collReduce(in, out, 4, collFloat, collSum, 0, comm_, fakeStream())},
      {"collAllGather", collAllGather(in, out, 4, collFloat, comm_, fakeStream())},
      {"collReduceScatter", collReduceScatter(in, out, 4, collFloat, collSum, comm_, fakeStream())},
      {"collBarrier", collBarrier(comm_, fakeStream())},
  };
  for (const auto& c : calls) {
    EXPECT_EQ(c.rc, collInvalidUsage) << c.name;
  }
  // The message of the last call, checked for its shape.
  const std::string message = collGetLastError(comm_);
  EXPECT_EQ(message.rfind("collBarrier: ", 0), 0u) << message;
  EXPECT_NE(message.find(expectedReason()), std::string::npos) << message;
  for (float v : out) EXPECT_EQ(v, 0.0f) << "a refused call wrote its output";
}

TEST_F(DeviceRefusal, MessageNamesTheFunctionAndTheMissingDevice) {
  float buf[2] = {1, 2};
  EXPECT_EQ(collAllReduce(buf, buf, 2, collFloat, collSum, comm_, fakeStream()), collInvalidUsage);
  const std::string message = collGetLastError(comm_);
  EXPECT_EQ(message.rfind("collAllReduce: ", 0), 0u) << message;
  EXPECT_NE(message.find(expectedReason()), std::string::npos) << message;
  EXPECT_NE(message.find("pass NULL for host buffers"), std::string::npos) << message;
  // Host calls still work on the same communicator.
  EXPECT_EQ(collAllReduce(buf, buf, 2, collFloat, collSum, comm_, nullptr), collSuccess);
}

TEST_F(DeviceRefusal, BadArgumentsAreReportedBeforeTheStream) {
  // An invalid datatype is collInvalidArgument whatever the stream.
  float buf[1] = {0};
  EXPECT_EQ(collAllReduce(buf, buf, 1, static_cast<collDataType_t>(42), collSum, comm_, fakeStream()),
            collInvalidArgument);
}

TEST_F(DeviceRefusal, CuDeviceIsMinusOneForAHostCommunicator) {
  int device = 7;
  EXPECT_EQ(collCommCuDevice(comm_, &device), collSuccess);
  EXPECT_EQ(device, -1);
}

// Runs on GPU machines too: the test's thread never made a CUDA context, so init must find none
// and make none.
TEST_F(DeviceRefusal, AHostCommunicatorMadeNoContext) {
  EXPECT_EQ(coll::currentContextDevice(), -1) << "communicator init made a CUDA context current";
}

TEST(DeviceQuery, AnswersConsistently) {
  std::string why;
  const bool available = coll::cudaDeviceAvailable(&why);
  if (!coll::cudaCompiledIn()) {
    EXPECT_FALSE(available);
  }
  if (!available) {
    EXPECT_FALSE(why.empty());
    EXPECT_EQ(coll::currentContextDevice(), -1);
    EXPECT_EQ(coll::cudaDriverFunction("cuCtxGetCurrent", 4000), nullptr);
  }
  EXPECT_EQ(coll::cudaDeviceAvailable(nullptr), available);
}

}  // namespace
