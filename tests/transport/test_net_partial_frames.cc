// Frames written in pieces: a NetSendConnection and a NetRecvConnection joined by a real stream
// socket with the smallest send buffer, drained only after the sender has met a full socket, so
// that a frame often goes out partly, the rest on a later pump. Frame sizes run across the size
// below which a frame is copied into one buffer before it is sent (2 KiB, net_connection.cc) and
// past it, and each frame's bytes differ from every other's, so that a frame resumed at the
// wrong offset, or a piece sent twice or not at all, shows as a wrong byte or a refused header.
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

constexpr size_t kSlotBytes = 4096;
constexpr int kDepth = 8;
constexpr int kFrames = 3000;

// Frame i's length: 0 to 2199 bytes, every fifth 1800 more (below kSlotBytes), so that lengths take
// every residue modulo 64 (the frames' padding unit) on both sides of 2 KiB.
size_t frameBytes(int i) { return static_cast<size_t>((i * 37) % 2200 + (i % 5 == 0 ? 1800 : 0)); }
uint8_t frameByte(int frame, size_t at) { return static_cast<uint8_t>(frame * 131 + at * 7 + 1); }

// A connected stream pair whose sender's buffer is the kernel's smallest (about 4.5 KiB, taken in
// pieces of half that): a socket pair rather than TCP over loopback, whose small windows reopen
// only on its delayed-acknowledgement and persist timers and would make this test take minutes.
// The connections only ever see a stream socket and its send and receive calls.
bool streamPair(int* sender, int* receiver) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return false;
  *sender = fds[0];
  *receiver = fds[1];
  int smallest = 1;  // raised by the kernel to its minimum
  return setsockopt(*sender, SOL_SOCKET, SO_SNDBUF, &smallest, sizeof(smallest)) == 0;
}

TEST(NetPartialFrames, FramesWrittenInPiecesArriveWhole) {
  int sender = -1, receiver = -1;
  ASSERT_TRUE(streamPair(&sender, &receiver)) << strerror(errno);
  RecordingOwner owner;
  NetSendConnection send(1, {sender}, kDepth, kSlotBytes, owner);
  NetRecvConnection recv(0, {receiver}, kDepth, kSlotBytes, owner);

  int posted = 0, taken = 0, stalls = 0;
  while (taken < kFrames && owner.failure.empty()) {
    // Post as many frames as the slots take; the socket fills long before they run out.
    while (posted < kFrames) {
      void* slot = send.tryAcquire();
      if (slot == nullptr) {
        ++stalls;
        break;
      }
      const size_t bytes = frameBytes(posted);
      for (size_t at = 0; at < bytes; ++at) static_cast<uint8_t*>(slot)[at] = frameByte(posted, at);
      send.post(bytes, static_cast<uint64_t>(posted));
      ++posted;
    }
    {
      std::lock_guard<std::mutex> lock(send.mutex());
      ASSERT_EQ(send.pump().error, "");
    }
    // Then take whatever has arrived, pumping until a pump brings nothing: each round the
    // sender meets a full socket again.
    for (bool moved = true; moved;) {
      {
        std::lock_guard<std::mutex> lock(recv.mutex());
        PumpResult result = recv.pump();
        ASSERT_EQ(result.error, "");
        moved = result.moved;
      }
      size_t got = 0;
      uint64_t tag = 0;
      while (const uint8_t* data = static_cast<const uint8_t*>(recv.tryPeek(&got, &tag))) {
        ASSERT_LT(taken, posted);
        ASSERT_EQ(got, frameBytes(taken)) << "frame " << taken;
        ASSERT_EQ(tag, static_cast<uint64_t>(taken)) << "frame " << taken << "'s tag";
        for (size_t at = 0; at < got; ++at)
          ASSERT_EQ(data[at], frameByte(taken, at)) << "frame " << taken << ", byte " << at << " of " << got;
        recv.release();
        ++taken;
      }
    }
  }
  EXPECT_EQ(owner.failure, "");
  EXPECT_EQ(taken, kFrames);
  EXPECT_GT(stalls, 0) << "the sender never met a full socket: the test did not exercise partial frames";
  close(sender);
  close(receiver);
}

}  // namespace
}  // namespace transport
}  // namespace coll
