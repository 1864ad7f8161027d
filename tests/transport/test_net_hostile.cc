// The socket transport against a peer that lies: a real NetDomain (rank 0 of 2) listens on
// loopback, and the test plays rank 1 over a raw TCP socket, sending hellos and frames of its
// own making. Every malformed input must end in a clear CollError naming the problem, never a
// crash, a hang or a write past a slot; well-formed input must still arrive intact.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/socket.h"
#include "transport/net/net_domain.h"

namespace coll {
namespace transport {
namespace {

using coll::Clock;

constexpr size_t kSlotBytes = 4096;
constexpr int kDepth = 4;

// Rank 0's domain, its card, and a thread running its setup until rank 1 connects.
class HostilePeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two ranks on this machine: rank 0 listens on loopback (transport/net/net_card.h).
    peers_.resize(2);
    for (int r = 0; r < 2; ++r) peers_[r].rank = r;
    settings_.netFifoDepth = kDepth;
    settings_.slotBytes = kSlotBytes;
    settings_.timeoutMs = 2000;
    settings_.socketsPerPeer = 1;
    DomainArgs args;
    args.rank = 0;
    args.nranks = 2;
    args.peers = &peers_;
    args.members = {1};
    args.settings = &settings_;
    domain_ = std::make_unique<NetDomain>(args);
    std::string cardBytes = domain_->card(0);
    card_ = parseNetCard(cardBytes, 0);
    connector_ = std::thread([this, cardBytes] {
      try {
        domain_->connect(0, {cardBytes, ""}, coll::deadlineAfter(std::chrono::milliseconds(3000)));
        domain_->useDoorbell(&bell_);
      } catch (const CollError& e) {
        setupError_ = e.what();
      }
    });
  }
  void TearDown() override {
    if (connector_.joinable()) connector_.join();
  }

  // Connects as rank 1 and sends `hello` (by default a correct one).
  coll::Fd connectAsRank1(NetHello hello) {
    coll::Fd fd =
        coll::connectWithDeadline(netCardHost(card_), card_.port, coll::deadlineAfter(std::chrono::milliseconds(2000)));
    coll::sendAll(fd.get(), &hello, sizeof(hello), coll::deadlineAfter(std::chrono::milliseconds(1000)));
    return fd;
  }
  NetHello goodHello() const {
    NetHello hello;
    hello.nonce[0] = card_.nonce[0];
    hello.nonce[1] = card_.nonce[1];
    hello.fromRank = 1;
    hello.socketIndex = 0;
    hello.socketsPerPeer = 1;
    hello.depth = kDepth;
    hello.slotBytes = kSlotBytes;
    return hello;
  }
  void send(int fd, const void* data, size_t bytes) {
    ASSERT_EQ(coll::sendAll(fd, data, bytes, coll::deadlineAfter(std::chrono::milliseconds(1000))),
              coll::IoStatus::kOk);
  }
  void sendHeader(int fd, uint32_t kind, uint32_t seq, uint64_t bytes) {
    NetFrameHeader header;
    header.kind = kind;
    header.seq = seq;
    header.bytes = bytes;
    send(fd, &header, sizeof(header));
  }
  // Waits (bounded) until the domain reports a broken connection; returns its message.
  std::string waitForFailure() {
    connector_.join();
    EXPECT_EQ(setupError_, "");
    RecvConnection* recv = domain_->recvConnection(1);
    auto deadline = Clock::now() + std::chrono::seconds(5);
    while (Clock::now() < deadline) {
      size_t bytes = 0;
      recv->tryPeek(&bytes);
      try {
        domain_->checkPeers();
      } catch (const CollError& e) {
        EXPECT_EQ(e.code(), collRemoteError);
        return e.what();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return "(no failure reported within 5 s)";
  }

  std::vector<PeerInfo> peers_;
  TransportSettings settings_;
  Doorbell bell_;
  std::unique_ptr<NetDomain> domain_;
  NetCard card_;
  std::thread connector_;
  std::string setupError_;
};

TEST_F(HostilePeerTest, WellFormedFramesArriveIntact) {
  coll::Fd fd = connectAsRank1(goodHello());
  std::vector<uint8_t> payload(kSlotBytes);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 7 + 3);
  for (uint32_t seq = 0; seq < 2 * kDepth; ++seq) {
    size_t bytes = seq % 2 ? kSlotBytes : 17;
    sendHeader(fd.get(), kNetFrameData, seq, bytes);
    send(fd.get(), payload.data(), bytes);
  }
  connector_.join();
  ASSERT_EQ(setupError_, "");
  RecvConnection* recv = domain_->recvConnection(1);
  for (uint32_t seq = 0; seq < 2 * kDepth; ++seq) {
    size_t bytes = 0;
    const void* data = nullptr;
    for (auto deadline = Clock::now() + std::chrono::seconds(5); data == nullptr && Clock::now() < deadline;)
      data = recv->tryPeek(&bytes);
    ASSERT_NE(data, nullptr) << "frame " << seq << " never arrived";
    ASSERT_EQ(bytes, seq % 2 ? kSlotBytes : 17u);
    EXPECT_EQ(memcmp(data, payload.data(), bytes), 0);
    recv->release();
  }
  EXPECT_NO_THROW(domain_->checkPeers());
}

TEST_F(HostilePeerTest, OversizedFrameIsAnError) {
  coll::Fd fd = connectAsRank1(goodHello());
  sendHeader(fd.get(), kNetFrameData, 0, kSlotBytes + 1);
  EXPECT_NE(waitForFailure().find("more than the 4096-byte slot"), std::string::npos);
}

TEST_F(HostilePeerTest, HugeLengthIsAnError) {
  coll::Fd fd = connectAsRank1(goodHello());
  sendHeader(fd.get(), kNetFrameData, 0, ~0ull);
  EXPECT_NE(waitForFailure().find("more than the"), std::string::npos);
}

TEST_F(HostilePeerTest, GarbageIsAnError) {
  coll::Fd fd = connectAsRank1(goodHello());
  const char garbage[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  send(fd.get(), garbage, sizeof(garbage));
  std::string message = waitForFailure();
  EXPECT_NE(message.find("unknown kind"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1"), std::string::npos) << message;
}

TEST_F(HostilePeerTest, OutOfOrderFrameIsAnError) {
  coll::Fd fd = connectAsRank1(goodHello());
  sendHeader(fd.get(), kNetFrameData, 5, 8);
  EXPECT_NE(waitForFailure().find("frame number 5 where 0 was expected"), std::string::npos);
}

TEST_F(HostilePeerTest, TruncatedFrameIsAnError) {
  coll::Fd fd = connectAsRank1(goodHello());
  sendHeader(fd.get(), kNetFrameData, 0, 1000);
  char partial[10] = {};
  send(fd.get(), partial, sizeof(partial));
  fd.reset();
  EXPECT_NE(waitForFailure().find("closed in the middle of a frame"), std::string::npos);
}

TEST_F(HostilePeerTest, TruncatedHeaderIsAnError) {
  coll::Fd fd = connectAsRank1(goodHello());
  char partial[5] = {};
  send(fd.get(), partial, sizeof(partial));
  fd.reset();
  EXPECT_NE(waitForFailure().find("closed in the middle of a frame"), std::string::npos);
}

TEST_F(HostilePeerTest, ClosingFrameWithPayloadIsAnError) {
  coll::Fd fd = connectAsRank1(goodHello());
  sendHeader(fd.get(), kNetFrameBye, 0, 64);
  EXPECT_NE(waitForFailure().find("closing frame with 64 payload bytes"), std::string::npos);
}

TEST_F(HostilePeerTest, GoodbyeThenCloseIsNotAFailure) {
  coll::Fd fd = connectAsRank1(goodHello());
  sendHeader(fd.get(), kNetFrameBye, 0, 0);
  shutdown(fd.get(), SHUT_WR);
  connector_.join();
  ASSERT_EQ(setupError_, "");
  auto* recv = domain_->recvConnection(1);
  size_t bytes = 0;
  for (auto deadline = Clock::now() + std::chrono::seconds(5); Clock::now() < deadline;) {
    recv->tryPeek(&bytes);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (static_cast<NetRecvConnection*>(recv)->departed()) break;
  }
  fd.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(static_cast<NetRecvConnection*>(recv)->departed());
  EXPECT_NO_THROW(domain_->checkPeers());
}

TEST_F(HostilePeerTest, StrangersAreTurnedAwayAndTheRealPeerStillConnects) {
  NetHello wrongNonce = goodHello();
  wrongNonce.nonce[0] ^= 1;
  coll::Fd stranger1 = connectAsRank1(wrongNonce);
  NetHello wrongRank = goodHello();
  wrongRank.fromRank = 0;
  coll::Fd stranger2 = connectAsRank1(wrongRank);
  NetHello wrongSettings = goodHello();
  wrongSettings.slotBytes = 1 << 30;
  coll::Fd stranger3 = connectAsRank1(wrongSettings);
  coll::Fd real = connectAsRank1(goodHello());
  connector_.join();
  EXPECT_EQ(setupError_, "");
  EXPECT_NO_THROW(domain_->checkPeers());
}

// A connection that never says hello does not hold up the real peer behind it (before, setup
// read one hello at a time and waited up to 5 s for each: here, past the 3 s setup deadline).
TEST_F(HostilePeerTest, SilentConnectionsDoNotDelayTheRealPeer) {
  std::vector<coll::Fd> silent;
  for (int i = 0; i < 3; ++i)
    silent.push_back(coll::connectWithDeadline(netCardHost(card_), card_.port,
                                               coll::deadlineAfter(std::chrono::milliseconds(2000))));
  const auto start = Clock::now();
  coll::Fd real = connectAsRank1(goodHello());
  connector_.join();
  EXPECT_EQ(setupError_, "");
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count(), 1000)
      << "the real peer waited behind the silent connections";
}

TEST_F(HostilePeerTest, NoPeerMeansATimeoutNamingIt) {
  connector_.join();
  EXPECT_NE(setupError_.find("waited in vain for connections from rank(s) 1"), std::string::npos) << setupError_;
}

TEST(NetWire, MalformedCardsAreRefused) {
  EXPECT_THROW(parseNetCard("short", 3), CollError);
  uint64_t nonce[2] = {1, 2};
  NetCard card = makeNetCard("10.0.0.1", 1234, nonce);
  std::string bytes(reinterpret_cast<const char*>(&card), sizeof(card));
  EXPECT_EQ(netCardHost(parseNetCard(bytes, 0)), "10.0.0.1");
  card.family = 9;
  EXPECT_THROW(parseNetCard(std::string(reinterpret_cast<const char*>(&card), sizeof(card)), 3), CollError);
  NetCard v6 = makeNetCard("::1", 1, nonce);
  EXPECT_EQ(netCardHost(parseNetCard(std::string(reinterpret_cast<const char*>(&v6), sizeof(v6)), 0)), "::1");
}

}  // namespace
}  // namespace transport
}  // namespace coll
