// The socket transport's frames under COLL_NET_ENCRYPT=1 (net_wire.h, common/record_layer.h): a
// NetSendConnection writes into one socket pair, the test reads the bytes and hands them, altered
// or not, to a NetRecvConnection through another. What the wire carries is no plaintext; a
// changed byte, a frame replayed or reordered, a plaintext frame and a forged goodbye each end the
// connection with an error for the sending rank.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/record_layer.h"
#include "tests/transport/recording_owner.h"
#include "transport/net/net_connection.h"

namespace coll {
namespace transport {
namespace {

constexpr size_t kSlotBytes = 8192;
constexpr int kDepth = 4;
constexpr int kSender = 3;  // the rank a failure must name
constexpr int kReceiver = 1;

// One direction of one encrypted socket, with the test in the middle.
class Link {
 public:
  explicit Link(bool senderEncrypts = true)
      : send_(kReceiver, {-1}, kDepth, kSlotBytes, owner_), recv_(kSender, {-1}, kDepth, kSlotBytes, owner_) {
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, out_), 0);
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, in_), 0);
    const std::array<uint8_t, 32> key{7, 7, 7};
    const uint8_t diallerNonce[32] = {1}, listenerNonce[32] = {2};
    const RecordKeys keys = deriveRecordKeys(key, "test", diallerNonce, listenerNonce);
    std::vector<std::unique_ptr<RecordCipher>> seal, open;
    if (senderEncrypts) seal.push_back(std::move(makeRecordCiphers(keys, RecordSide::kOpener).seal));
    open.push_back(std::move(makeRecordCiphers(keys, RecordSide::kAccepter).open));
    send_.attach({out_[0]}, std::move(seal));
    recv_.attach({in_[1]}, std::move(open));
  }
  ~Link() {
    for (int fd : {out_[0], out_[1], in_[0], in_[1]}) close(fd);
  }

  // Posts `bytes` bytes of `pattern` and returns the frame as it went on the wire.
  std::vector<uint8_t> sendFrame(size_t bytes, uint8_t pattern) {
    void* slot = send_.tryAcquire();
    EXPECT_NE(slot, nullptr);
    std::memset(slot, pattern, bytes);
    send_.post(bytes, 0x1234);
    {
      std::lock_guard<std::mutex> lock(send_.mutex());
      EXPECT_EQ(send_.pump().error, "");
    }
    return drain();
  }
  std::vector<uint8_t> goodbye() { return send_.closingFrame(0); }
  // Offers `destination` for the next frames, as the executor does for a receive (offerLanding).
  void offerLanding(void* destination, size_t totalBytes, size_t sliceBytes) {
    recv_.offerLanding(destination, totalBytes, sliceBytes, /*holdLater=*/false, 0x1234);
  }
  // Hands bytes to the receiver and pumps it; returns its error, "" when none.
  std::string deliver(const std::vector<uint8_t>& bytes) {
    EXPECT_EQ(write(in_[0], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    std::lock_guard<std::mutex> lock(recv_.mutex());
    return recv_.pump().error;
  }
  // The payload of the next frame received, or "" when none came.
  std::string take() {
    size_t bytes = 0;
    uint64_t tag = 0;
    const void* data = recv_.tryPeek(&bytes, &tag);
    if (data == nullptr) return "";
    std::string payload(static_cast<const char*>(data), bytes);
    recv_.release();
    return payload;
  }
  const RecordingOwner& owner() const { return owner_; }
  bool departed() const { return recv_.departed(); }

 private:
  std::vector<uint8_t> drain() {
    std::vector<uint8_t> bytes(64 << 10);
    const ssize_t n = recv(out_[1], bytes.data(), bytes.size(), MSG_DONTWAIT);
    bytes.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return bytes;
  }
  RecordingOwner owner_;
  NetSendConnection send_;
  NetRecvConnection recv_;
  int out_[2] = {-1, -1};
  int in_[2] = {-1, -1};
};

NetFrameHeader headerOf(const std::vector<uint8_t>& frame) {
  NetFrameHeader header;
  std::memcpy(static_cast<void*>(&header), frame.data(), sizeof(header));
  return header;
}

TEST(NetEncryption, FramesCarryNoPlaintextAndArriveIntact) {
  Link link;
  for (size_t bytes : {size_t{0}, size_t{8}, size_t{1000}, size_t{5000}, kSlotBytes}) {
    const std::vector<uint8_t> frame = link.sendFrame(bytes, 'x');
    const NetFrameHeader header = headerOf(frame);
    EXPECT_EQ(header.flags, kNetFrameSealed);
    EXPECT_EQ(frame.size(), netFrameWireBytes(header));
    EXPECT_EQ(frame.size() % kNetFrameAlign, 0u);
    const std::string run(8, 'x');
    EXPECT_EQ(std::search(frame.begin(), frame.end(), run.begin(), run.end()), frame.end())
        << bytes << "-byte frame: plaintext on the wire";
    ASSERT_EQ(link.deliver(frame), "");
    EXPECT_EQ(link.take(), std::string(bytes, 'x'));
  }
  EXPECT_EQ(link.owner().failure, "");
}

TEST(NetEncryption, ATamperedByteFailsAuthenticationNamingTheSender) {
  for (const char* where : {"payload", "header", "tag"}) {
    Link link;
    std::vector<uint8_t> frame = link.sendFrame(1000, 'y');
    const NetFrameHeader header = headerOf(frame);
    const size_t at = std::string(where) == "payload"  ? sizeof(header) + header.lead + 500
                      : std::string(where) == "header" ? offsetof(NetFrameHeader, tag)
                                                       : sizeof(header) + header.lead + header.bytes + 3;
    frame[at] ^= 0x20;
    const std::string error = link.deliver(frame);
    EXPECT_NE(error.find("failed authentication"), std::string::npos) << where << ": " << error;
    EXPECT_EQ(link.owner().failedPeer, kSender) << where;
    EXPECT_EQ(link.take(), "") << where << ": a tampered frame was handed over";
  }
}

// A tampered frame offered a place in the caller's memory leaves nothing there: the buffer keeps
// its poison (before: a sealed frame was read and opened in place, so its bytes, decrypted or not,
// stayed in the caller's buffer when it failed authentication).
TEST(NetEncryption, ATamperedFrameLeavesNothingInTheCallersBuffer) {
  constexpr size_t kBytes = 1000;
  constexpr uint8_t kPoison = 0xee;
  for (const char* where : {"payload", "header", "tag", "nowhere"}) {
    Link link;
    std::vector<uint8_t> output(kBytes, kPoison);
    link.offerLanding(output.data(), kBytes, kBytes);
    std::vector<uint8_t> frame = link.sendFrame(kBytes, 'y');
    const NetFrameHeader header = headerOf(frame);
    const std::string place(where);
    const size_t at = place == "payload"  ? sizeof(header) + header.lead + 500
                      : place == "header" ? offsetof(NetFrameHeader, tag)
                                          : sizeof(header) + header.lead + header.bytes + 3;
    if (place != "nowhere") frame[at] ^= 0x20;
    const std::string error = link.deliver(frame);
    if (place == "nowhere") {
      EXPECT_EQ(error, "");
      EXPECT_EQ(link.take(), std::string(kBytes, 'y')) << "an intact frame did not arrive";
      continue;
    }
    EXPECT_NE(error.find("failed authentication"), std::string::npos) << where << ": " << error;
    EXPECT_EQ(link.take(), "") << where << ": a tampered frame was handed over";
    const size_t changed =
        static_cast<size_t>(std::count_if(output.begin(), output.end(), [](uint8_t b) { return b != kPoison; }));
    EXPECT_EQ(changed, 0u) << where << ": " << changed << " bytes of an unauthenticated frame reached the buffer";
  }
}

TEST(NetEncryption, AReplayedOrReorderedFrameIsRefused) {
  {
    Link link;
    const std::vector<uint8_t> first = link.sendFrame(100, 'a');
    ASSERT_EQ(link.deliver(first), "");
    EXPECT_NE(link.deliver(first), "") << "the same frame was accepted twice";
  }
  {
    // A later frame renumbered to pass for the expected one: only its seal gives it away.
    Link link;
    link.sendFrame(100, 'a');
    std::vector<uint8_t> second = link.sendFrame(100, 'b');
    NetFrameHeader header = headerOf(second);
    header.seq = 0;
    std::memcpy(second.data(), &header, sizeof(header));
    const std::string error = link.deliver(second);
    EXPECT_NE(error.find("failed authentication"), std::string::npos) << error;
    EXPECT_EQ(link.owner().failedPeer, kSender);
  }
}

TEST(NetEncryption, APlaintextFrameIsRefusedWhereEncryptionIsExpected) {
  Link link(/*senderEncrypts=*/false);
  const std::string error = link.deliver(link.sendFrame(100, 'p'));
  EXPECT_NE(error.find("in plaintext where this rank encrypts"), std::string::npos) << error;
}

TEST(NetEncryption, ASealedGoodbyeCountsAndAForgedOneIsRefused) {
  {
    Link link;
    ASSERT_EQ(link.deliver(link.sendFrame(10, 'g')), "");
    const std::vector<uint8_t> bye = link.goodbye();
    EXPECT_EQ(bye.size(), sizeof(NetFrameHeader) + kRecordTagBytes);
    ASSERT_EQ(link.deliver(bye), "");
    EXPECT_TRUE(link.departed());
  }
  {
    Link link;
    std::vector<uint8_t> bye = link.goodbye();
    bye.back() ^= 1;
    EXPECT_NE(link.deliver(bye).find("failed authentication"), std::string::npos);
    EXPECT_FALSE(link.departed());
  }
}

}  // namespace
}  // namespace transport
}  // namespace coll
