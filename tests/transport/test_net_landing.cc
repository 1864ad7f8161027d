// Receiving straight into the caller's memory over sockets (transport.h, offerLanding): a
// NetSendConnection and a NetRecvConnection joined by a real socket pair, pumped by the test. A
// frame covered by an offer must be read into its place (tryPeek returns that place, and the slot
// stays untouched); a frame of another size must not land; frames that came before the offer come
// from their slots; and after withdrawLanding nothing more is written into the caller's memory,
// while what had already landed, whole or in part, arrives from the slots intact.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/transport/recording_owner.h"
#include "transport/net/net_connection.h"

namespace coll {
namespace transport {
namespace {

constexpr size_t kSlotBytes = 1024;
constexpr int kDepth = 4;
constexpr uint64_t kTag = 0x7000000000000123;  // a call's tag (src/call_tag.h): opaque to the transport

class NetLanding : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0);
    send_ = std::make_unique<NetSendConnection>(1, std::vector<int>{fds_[0]}, kDepth, kSlotBytes, owner_);
    recv_ = std::make_unique<NetRecvConnection>(0, std::vector<int>{fds_[1]}, kDepth, kSlotBytes, owner_);
  }
  void TearDown() override {
    close(fds_[0]);
    close(fds_[1]);
    EXPECT_EQ(owner_.failure, "");
  }
  // Sends `bytes` bytes of value `fill` as one frame through a slot, of the call `tag`.
  void sendFrame(size_t bytes, uint8_t fill, uint64_t tag = kTag) {
    void* slot = send_->tryAcquire();
    ASSERT_NE(slot, nullptr);
    std::memset(slot, fill, bytes);
    send_->post(bytes, tag);
    std::lock_guard<std::mutex> lock(send_->mutex());
    ASSERT_EQ(send_->pump().error, "");
  }
  void pumpReceiver() {
    std::lock_guard<std::mutex> lock(recv_->mutex());
    ASSERT_EQ(recv_->pump().error, "");
  }
  // Takes the next frame: where it lies, after checking its size, its tag and that every byte is
  // `fill`.
  const uint8_t* take(size_t bytes, uint8_t fill, uint64_t tag = kTag) {
    size_t got = 0;
    uint64_t gotTag = 0;
    const void* data = recv_->tryPeek(&got, &gotTag);
    EXPECT_NE(data, nullptr);
    if (data == nullptr) return nullptr;
    EXPECT_EQ(got, bytes);
    EXPECT_EQ(gotTag, tag);
    const uint8_t* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < got; ++i)
      if (p[i] != fill) {
        ADD_FAILURE() << "byte " << i << " is " << int(p[i]) << ", expected " << int(fill);
        break;
      }
    recv_->release();
    return p;
  }

  int fds_[2];
  RecordingOwner owner_;
  std::unique_ptr<NetSendConnection> send_;
  std::unique_ptr<NetRecvConnection> recv_;
};

TEST_F(NetLanding, OfferedFramesAreReadIntoPlace) {
  // 2.5 slices: 1024 + 1024 + 512 bytes.
  std::vector<uint8_t> output(2560, 0xEE);
  recv_->offerLanding(output.data(), output.size(), kSlotBytes, /*holdLater=*/false, kTag);
  sendFrame(1024, 1);
  sendFrame(1024, 2);
  sendFrame(512, 3);
  pumpReceiver();
  EXPECT_EQ(take(1024, 1), output.data());
  EXPECT_EQ(take(1024, 2), output.data() + 1024);
  EXPECT_EQ(take(512, 3), output.data() + 2048);
  recv_->withdrawLanding();
}

TEST_F(NetLanding, FramesBeforeTheOfferComeFromSlots) {
  std::vector<uint8_t> output(2048, 0xEE);
  sendFrame(1024, 1);
  pumpReceiver();  // read ahead into its slot before the executor knew where it goes
  recv_->offerLanding(output.data(), output.size(), kSlotBytes, /*holdLater=*/false, kTag);
  sendFrame(1024, 2);
  pumpReceiver();
  const uint8_t* first = take(1024, 1);
  EXPECT_NE(first, output.data());
  EXPECT_EQ(output[0], 0xEE) << "a frame read before the offer must stay in its slot";
  EXPECT_EQ(take(1024, 2), output.data() + 1024);
  recv_->withdrawLanding();
}

TEST_F(NetLanding, AFrameOfAnotherSizeDoesNotLand) {
  std::vector<uint8_t> output(2048, 0xEE);
  recv_->offerLanding(output.data(), output.size(), kSlotBytes, /*holdLater=*/false, kTag);
  sendFrame(1000, 7);  // the executor expects 1024 here: a peer's mistake, reported by the executor
  pumpReceiver();
  const uint8_t* data = take(1000, 7);
  EXPECT_NE(data, output.data());
  for (uint8_t b : output) ASSERT_EQ(b, 0xEE);
  recv_->withdrawLanding();
}

// A frame of another call (a count or datatype that differs: src/call_tag.h) has the size expected
// there, yet stays in its slot, its tag handed to the executor, which fails on it.
TEST_F(NetLanding, AFrameOfAnotherCallDoesNotLand) {
  std::vector<uint8_t> output(2048, 0xEE);
  recv_->offerLanding(output.data(), output.size(), kSlotBytes, /*holdLater=*/false, kTag);
  sendFrame(1024, 7, kTag + 1);
  pumpReceiver();
  const uint8_t* data = take(1024, 7, kTag + 1);
  EXPECT_NE(data, output.data());
  for (uint8_t b : output) ASSERT_EQ(b, 0xEE);
  recv_->withdrawLanding();
}

TEST_F(NetLanding, FramesBeyondTheOfferGoToSlots) {
  std::vector<uint8_t> output(1024, 0xEE);
  recv_->offerLanding(output.data(), output.size(), kSlotBytes, /*holdLater=*/false, kTag);
  sendFrame(1024, 1);
  sendFrame(1024, 2);  // the next step's: not covered
  pumpReceiver();
  EXPECT_EQ(take(1024, 1), output.data());
  const uint8_t* second = take(1024, 2);
  EXPECT_NE(second, output.data());
  for (uint8_t b : output) ASSERT_EQ(b, 1);
  recv_->withdrawLanding();
}

// A landing that holds later frames back (offerLanding with holdLater): the frame past it stays in the
// socket while the landing's own frame is untaken, and lands in the next offer, not in a slot.
TEST_F(NetLanding, HeldFramesWaitAndLandInTheNextOffer) {
  std::vector<uint8_t> first(1024, 0xEE), second(1024, 0xEE);
  recv_->offerLanding(first.data(), first.size(), kSlotBytes, /*holdLater=*/true, kTag);
  sendFrame(1024, 1);
  sendFrame(1024, 2);  // the next call's
  pumpReceiver();
  pumpReceiver();
  EXPECT_EQ(take(1024, 1), first.data());
  recv_->withdrawLanding();
  // Held back: not read into a slot while the first landing was open.
  recv_->offerLanding(second.data(), second.size(), kSlotBytes, /*holdLater=*/true, kTag);
  pumpReceiver();
  EXPECT_EQ(take(1024, 2), second.data()) << "the held frame must land in the offer made for it";
  recv_->withdrawLanding();
}

// Once every frame of the landing is taken, frames past it are read again (into slots where no
// offer covers them): holding back never stalls a later step that reads from slots.
TEST_F(NetLanding, HoldingEndsWhenTheLandingIsTaken) {
  std::vector<uint8_t> output(1024, 0xEE);
  recv_->offerLanding(output.data(), output.size(), kSlotBytes, /*holdLater=*/true, kTag);
  sendFrame(1024, 1);
  sendFrame(512, 2);  // a later step of the same call, which reduces from its slot
  pumpReceiver();
  EXPECT_EQ(take(1024, 1), output.data());
  const uint8_t* later = take(512, 2);  // tryPeek pumps again, now past the landing
  EXPECT_NE(later, output.data());
  for (uint8_t b : output) ASSERT_EQ(b, 1);
  recv_->withdrawLanding();
}

// Without the request, frames past the landing are read ahead into slots, as before.
TEST_F(NetLanding, WithoutHoldingLaterFramesAreReadAhead) {
  std::vector<uint8_t> first(1024, 0xEE), second(1024, 0xEE);
  recv_->offerLanding(first.data(), first.size(), kSlotBytes, /*holdLater=*/false, kTag);
  sendFrame(1024, 1);
  sendFrame(1024, 2);
  pumpReceiver();
  EXPECT_EQ(take(1024, 1), first.data());
  recv_->withdrawLanding();
  recv_->offerLanding(second.data(), second.size(), kSlotBytes, /*holdLater=*/false, kTag);
  EXPECT_NE(take(1024, 2), second.data()) << "read ahead before its offer: it comes from its slot";
  for (uint8_t b : second) ASSERT_EQ(b, 0xEE);
  recv_->withdrawLanding();
}

TEST_F(NetLanding, WithdrawMovesWhatLandedAndStopsWriting) {
  std::vector<uint8_t> output(3072, 0xEE);
  recv_->offerLanding(output.data(), output.size(), kSlotBytes, /*holdLater=*/false, kTag);
  sendFrame(1024, 1);  // lands whole, not taken before the withdrawal
  // Half of the second frame: header and 500 payload bytes, written by hand.
  NetFrameHeader header;
  header.seq = 1;
  header.bytes = 1024;
  header.tag = kTag;
  std::vector<uint8_t> half(500, 2);
  ASSERT_EQ(write(fds_[0], &header, sizeof(header)), static_cast<ssize_t>(sizeof(header)));
  ASSERT_EQ(write(fds_[0], half.data(), half.size()), static_cast<ssize_t>(half.size()));
  pumpReceiver();
  EXPECT_EQ(output[1024], 2) << "the second frame's first bytes should have landed";
  recv_->withdrawLanding();
  std::fill(output.begin(), output.end(), 0xEE);  // the caller reuses its memory
  std::vector<uint8_t> rest(524, 2);
  ASSERT_EQ(write(fds_[0], rest.data(), rest.size()), static_cast<ssize_t>(rest.size()));
  pumpReceiver();
  for (uint8_t b : output) ASSERT_EQ(b, 0xEE) << "written after withdrawLanding";
  EXPECT_NE(take(1024, 1), output.data());
  EXPECT_NE(take(1024, 2), output.data() + 1024);
}

}  // namespace
}  // namespace transport
}  // namespace coll
