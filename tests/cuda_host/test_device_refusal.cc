// Device buffers where the library cannot run them (no GPU, or no CUDA in this build): a call with
// a stream is refused with collInvalidUsage and a message naming the function, before anything is
// touched ("no CUDA device: ..."), alone or in a group, on every rank alike and without any of
// them waiting for the others (the device setup that a first call with a stream joins is never
// started); collCommCuDevice reports -1. And on any machine: making a communicator creates no
// CUDA context (a host-only user on a GPU machine pays nothing for the device path).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/memory_store.h"
#include "collective.h"
#include "common/cuda_device.h"
#include "src/api_internal.h"

namespace {

// With a GPU the library accepts streams; these tests are about the machines where it cannot.
#define SKIP_WITH_A_GPU()                                                                         \
  do {                                                                                            \
    if (coll::cudaDeviceAvailable()) GTEST_SKIP() << "a CUDA device is present: nothing refused"; \
  } while (0)

// A stream the library must never touch: the refusal comes first.
collStream_t fakeStream() { return reinterpret_cast<collStream_t>(uintptr_t(0x10)); }

class DeviceRefusal : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = std::make_shared<coll::bootstrap::MemoryStore>();
    ASSERT_EQ(coll::commInitWithStore(&comm_, store, 1, 0, nullptr), collSuccess) << collGetLastError(nullptr);
  }
  void TearDown() override {
    if (comm_ != nullptr) collCommDestroy(comm_);
  }
  collComm_t comm_ = nullptr;
};

const char kReason[] = "no CUDA device: ";

TEST_F(DeviceRefusal, EveryCollectiveWithAStreamIsRefusedByName) {
  SKIP_WITH_A_GPU();
  float in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
  const size_t counts[1] = {4}, displs[1] = {0};
  struct {
    const char* name;
    collResult_t rc;
  } calls[] = {
      {"collAllReduce", collAllReduce(in, out, 4, collFloat, collSum, comm_, fakeStream())},
      {"collBroadcast", collBroadcast(in, out, 4, collFloat, 0, comm_, fakeStream())},
      {"collReduce", collReduce(in, out, 4, collFloat, collSum, 0, comm_, fakeStream())},
      {"collAllGather", collAllGather(in, out, 4, collFloat, comm_, fakeStream())},
      {"collReduceScatter", collReduceScatter(in, out, 4, collFloat, collSum, comm_, fakeStream())},
      {"collSend", collSend(in, 4, collFloat, 0, comm_, fakeStream())},
      {"collRecv", collRecv(out, 4, collFloat, 0, comm_, fakeStream())},
      {"collAllGatherV", collAllGatherV(in, 4, out, counts, displs, collFloat, comm_, fakeStream())},
      {"collReduceScatterV", collReduceScatterV(in, out, counts, collFloat, collSum, comm_, fakeStream())},
      {"collAllToAllV", collAllToAllV(in, counts, displs, out, counts, displs, collFloat, comm_, fakeStream())},
      {"collBarrier", collBarrier(comm_, fakeStream())},
  };
  for (const auto& c : calls) {
    EXPECT_EQ(c.rc, collInvalidUsage) << c.name;
  }
  // The message of the last call, checked for its shape.
  const std::string message = collGetLastError(comm_);
  EXPECT_EQ(message.rfind("collBarrier: ", 0), 0u) << message;
  EXPECT_NE(message.find(kReason), std::string::npos) << message;
  for (float v : out) EXPECT_EQ(v, 0.0f) << "a refused call wrote its output";
}

TEST_F(DeviceRefusal, MessageNamesTheFunctionAndTheMissingDevice) {
  SKIP_WITH_A_GPU();
  float buf[2] = {1, 2};
  EXPECT_EQ(collAllReduce(buf, buf, 2, collFloat, collSum, comm_, fakeStream()), collInvalidUsage);
  const std::string message = collGetLastError(comm_);
  EXPECT_EQ(message.rfind("collAllReduce: ", 0), 0u) << message;
  EXPECT_NE(message.find(kReason), std::string::npos) << message;
  EXPECT_NE(message.find("pass NULL for host buffers"), std::string::npos) << message;
  // A refusal is a usage error, not a failure: host calls still work on the same communicator.
  collResult_t async = collInternalError;
  EXPECT_EQ(collCommGetAsyncError(comm_, &async), collSuccess);
  EXPECT_EQ(async, collSuccess);
  EXPECT_EQ(collAllReduce(buf, buf, 2, collFloat, collSum, comm_, nullptr), collSuccess);
}

TEST_F(DeviceRefusal, AGroupedCallWithAStreamIsRefusedBeforeItIsQueued) {
  SKIP_WITH_A_GPU();
  float in[2] = {1, 2}, out[2] = {0, 0};
  ASSERT_EQ(collGroupStart(), collSuccess);
  EXPECT_EQ(collSend(in, 2, collFloat, 0, comm_, fakeStream()), collInvalidUsage);
  EXPECT_NE(std::string(collGetLastError(comm_)).find(kReason), std::string::npos) << collGetLastError(comm_);
  // Host calls of the same group still run at GroupEnd; the refused one was never queued.
  EXPECT_EQ(collSend(in, 2, collFloat, 0, comm_, nullptr), collSuccess);
  EXPECT_EQ(collRecv(out, 2, collFloat, 0, comm_, nullptr), collSuccess);
  EXPECT_EQ(collGroupEnd(), collSuccess) << collGetLastError(comm_);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 2.0f);
}

TEST_F(DeviceRefusal, BadArgumentsAreReportedBeforeTheStream) {
  // An invalid datatype is collInvalidArgument whatever the stream.
  float buf[1] = {0};
  EXPECT_EQ(collAllReduce(buf, buf, 1, static_cast<collDataType_t>(42), collSum, comm_, fakeStream()),
            collInvalidArgument);
}

// Runs on GPU machines too: the test's thread never made a CUDA context, so init must find none
// and make none.
TEST_F(DeviceRefusal, AHostCommunicatorHasNoDeviceAndMadeNoContext) {
  int device = 7;
  EXPECT_EQ(collCommCuDevice(comm_, &device), collSuccess);
  EXPECT_EQ(device, -1);
  EXPECT_EQ(coll::currentContextDevice(), -1) << "communicator init made a CUDA context current";
}

// Every rank's first call with a stream would join the collective device setup; where the call
// is refused, none starts it, so no rank waits for the others (a hang would hit the ctest timeout).
TEST(DeviceRefusalRanks, EveryRankIsRefusedAloneAndAtOnce) {
  SKIP_WITH_A_GPU();
  constexpr int kRanks = 3;
  auto store = std::make_shared<coll::bootstrap::MemoryStore>();
  std::vector<collResult_t> rc(kRanks, collSuccess);
  std::vector<std::string> message(kRanks);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r)
    ranks.emplace_back([&, r] {
      collComm_t comm = nullptr;
      if (coll::commInitWithStore(&comm, store, kRanks, r, nullptr) != collSuccess) {
        message[r] = std::string("init: ") + collGetLastError(nullptr);
        return;
      }
      float buf[1] = {1};
      // Rank 0 starts with a send, the others with a collective: the setup would not care.
      rc[r] = r == 0 ? collSend(buf, 1, collFloat, 1, comm, fakeStream())
                     : collAllReduce(buf, buf, 1, collFloat, collSum, comm, fakeStream());
      message[r] = collGetLastError(comm);
      // Still usable for host memory, on every rank together.
      if (collAllReduce(buf, buf, 1, collFloat, collSum, comm, nullptr) != collSuccess || buf[0] != kRanks)
        message[r] += " | host all-reduce after the refusal failed";
      collCommDestroy(comm);
    });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(rc[r], collInvalidUsage) << "rank " << r << ": " << message[r];
    EXPECT_NE(message[r].find(kReason), std::string::npos) << "rank " << r << ": " << message[r];
    EXPECT_EQ(message[r].find("host all-reduce"), std::string::npos) << "rank " << r << ": " << message[r];
  }
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
