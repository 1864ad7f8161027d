// The socket transport against a peer that lies: a real NetDomain (rank 0 of 2) listens on
// loopback, and the test plays rank 1 over a raw TCP socket, sending hellos and frames of its
// own making (the handshake too: it knows the job's secret, or plays a stranger who does not). Every malformed input
// must end in a clear CollError naming the problem, never a crash, a hang or a write past a slot; well-formed input
// must still arrive intact.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
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

// One rank of a 2-rank job, connected through the socket domain to the other.
DomainArgs twoRankArgs(int rank, const std::vector<PeerInfo>* peers, const TransportSettings* settings) {
  DomainArgs args;
  args.rank = rank;
  args.nranks = 2;
  args.peers = peers;
  args.members = {1 - rank};
  args.settings = settings;
  return args;
}

// Rank 0's domain, its card, and a thread running its setup (which returns at once: sockets are
// accepted at first use, by the progress thread that useDoorbell starts).
class HostilePeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two ranks on this machine: rank 0 listens on loopback (transport/net/net_card.h).
    peers_.resize(2);
    for (int r = 0; r < 2; ++r) peers_[r].rank = r;
    settings_.netFifoDepth = kDepth;
    settings_.slotBytes = kSlotBytes;
    settings_.timeoutMs = 2000;
    settings_.socketsPerPeer = sockets_;
    settings_.jobSecret.fill(0x42);
    domain_ = std::make_unique<NetDomain>(twoRankArgs(0, &peers_, &settings_));
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

  // Connects as rank 1 and sends `hello`, nothing more (a stranger's first step).
  coll::Fd connectAsRank1(NetHello hello) {
    coll::Fd fd =
        coll::connectWithDeadline(netCardHost(card_), card_.port, coll::deadlineAfter(std::chrono::milliseconds(2000)));
    coll::sendAll(fd.get(), &hello, sizeof(hello), coll::deadlineAfter(std::chrono::milliseconds(1000)));
    return fd;
  }
  // Reads the listener's challenge on `fd` (all zeros when none came within a second).
  static NetChallenge readChallenge(int fd) {
    NetChallenge challenge;
    coll::recvAll(fd, &challenge, sizeof(challenge), coll::deadlineAfter(std::chrono::milliseconds(1000)));
    return challenge;
  }
  NetProof proofFor(const NetHello& hello, const NetChallenge& challenge, const std::array<uint8_t, 32>& secret) {
    NetProof proof;
    writeNetProof(netConnectionKey(secret), NetRole::kDialler, hello, challenge.listenerNonce, proof.diallerProof);
    return proof;
  }
  // The whole handshake as rank 1 with `secret`: the listener's proof is checked when `secret`
  // is the job's. Returns the connection, and what crossed it in *challenge and *proof.
  coll::Fd connectAndProve(const NetHello& hello, const std::array<uint8_t, 32>& secret,
                           NetChallenge* challengeOut = nullptr, NetProof* proofOut = nullptr) {
    coll::Fd fd = connectAsRank1(hello);
    NetChallenge challenge = readChallenge(fd.get());
    if (secret == settings_.jobSecret) {
      EXPECT_TRUE(netProofMatches(netConnectionKey(secret), NetRole::kListener, hello, challenge.listenerNonce,
                                  challenge.listenerProof))
          << "the listener's proof is wrong";
    }
    NetProof proof = proofFor(hello, challenge, secret);
    send(fd.get(), &proof, sizeof(proof));
    if (challengeOut != nullptr) *challengeOut = challenge;
    if (proofOut != nullptr) *proofOut = proof;
    return fd;
  }
  coll::Fd connectAndProve(const NetHello& hello) { return connectAndProve(hello, settings_.jobSecret); }
  NetHello goodHello(int socketIndex = 0) const {
    NetHello hello;
    hello.nonce[0] = card_.nonce[0];
    hello.nonce[1] = card_.nonce[1];
    hello.fromRank = 1;
    hello.socketIndex = socketIndex;
    hello.socketsPerPeer = sockets_;
    for (size_t i = 0; i < sizeof(hello.diallerNonce); ++i) hello.diallerNonce[i] = static_cast<uint8_t>(i + 1);
    hello.depth = kDepth;
    hello.slotBytes = kSlotBytes;
    return hello;
  }
  void send(int fd, const void* data, size_t bytes) {
    ASSERT_EQ(coll::sendAll(fd, data, bytes, coll::deadlineAfter(std::chrono::milliseconds(1000))),
              coll::IoStatus::kOk);
  }
  void sendHeader(int fd, uint32_t kind, uint32_t seq, uint64_t bytes, uint8_t lead = 0, uint8_t trail = 0) {
    NetFrameHeader header;
    header.kind = kind;
    header.seq = seq;
    header.bytes = static_cast<uint32_t>(bytes);
    header.lead = lead;
    header.trail = trail;
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
      uint64_t tag = 0;
      recv->tryPeek(&bytes, &tag);
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

  int sockets_ = 1;
  std::vector<PeerInfo> peers_;
  TransportSettings settings_;
  Doorbell bell_;
  std::unique_ptr<NetDomain> domain_;
  NetCard card_;
  std::thread connector_;
  std::string setupError_;
};

TEST_F(HostilePeerTest, WellFormedFramesArriveIntact) {
  coll::Fd fd = connectAndProve(goodHello());
  std::vector<uint8_t> payload(kSlotBytes);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 7 + 3);
  // Frames with and without padding (net_wire.h): the zero bytes around a payload never reach it,
  // also where the payload is empty or the padding arrives in pieces.
  const std::vector<uint8_t> zeros(kNetFrameAlign, 0);
  auto bytesOf = [](uint32_t seq) { return std::vector<size_t>{17, kSlotBytes, 0, 100}[seq % 4]; };
  for (uint32_t seq = 0; seq < 2 * kDepth; ++seq) {
    const size_t bytes = bytesOf(seq);
    const uint8_t lead = seq % 4 == 0 ? 0 : static_cast<uint8_t>(seq * 13 % kNetFrameAlign);
    const uint8_t trail = seq % 4 == 0 ? 0 : static_cast<uint8_t>(kNetFrameAlign - 1 - seq % 4);
    sendHeader(fd.get(), kNetFrameData, seq, bytes, lead, trail);
    send(fd.get(), zeros.data(), lead);
    send(fd.get(), payload.data(), bytes / 2);
    send(fd.get(), payload.data() + bytes / 2, bytes - bytes / 2);
    send(fd.get(), zeros.data(), trail / 2);
    send(fd.get(), zeros.data(), trail - trail / 2);
  }
  connector_.join();
  ASSERT_EQ(setupError_, "");
  RecvConnection* recv = domain_->recvConnection(1);
  for (uint32_t seq = 0; seq < 2 * kDepth; ++seq) {
    size_t bytes = 0;
    uint64_t tag = 0;
    const void* data = nullptr;
    for (auto deadline = Clock::now() + std::chrono::seconds(5); data == nullptr && Clock::now() < deadline;)
      data = recv->tryPeek(&bytes, &tag);
    ASSERT_NE(data, nullptr) << "frame " << seq << " never arrived";
    ASSERT_EQ(bytes, bytesOf(seq));
    EXPECT_EQ(memcmp(data, payload.data(), bytes), 0);
    recv->release();
  }
  EXPECT_NO_THROW(domain_->checkPeers());
}

TEST_F(HostilePeerTest, OversizedFrameIsAnError) {
  coll::Fd fd = connectAndProve(goodHello());
  sendHeader(fd.get(), kNetFrameData, 0, kSlotBytes + 1);
  EXPECT_NE(waitForFailure().find("more than the 4096-byte slot"), std::string::npos);
}

TEST_F(HostilePeerTest, HugeLengthIsAnError) {
  coll::Fd fd = connectAndProve(goodHello());
  sendHeader(fd.get(), kNetFrameData, 0, ~0ull);
  EXPECT_NE(waitForFailure().find("more than the"), std::string::npos);
}

// The sender's padding rule (net_wire.h): every frame ends on a 64-byte boundary, and a large
// payload starts, counted from its frame's start, at its source address's offset modulo 64.
TEST(NetFramePadding, AlignsLargePayloadsToTheirSourceAndEndsFramesOnTheBoundary) {
  alignas(kNetFrameAlign) static uint8_t memory[2 * kNetFrameAlign];
  for (size_t offset = 0; offset < kNetFrameAlign; ++offset) {
    for (uint32_t bytes : {0u, 1u, 17u, 4095u, 4096u, 4097u, 524291u}) {
      NetFrameHeader header;
      header.bytes = bytes;
      netFramePadding(header, memory + offset);
      ASSERT_LT(header.lead, kNetFrameAlign);
      ASSERT_LT(header.trail, kNetFrameAlign);
      EXPECT_EQ(netFrameWireBytes(header) % kNetFrameAlign, 0u) << bytes << " bytes at offset " << offset;
      if (bytes >= kNetAlignedPayloadBytes) {
        EXPECT_EQ((sizeof(header) + header.lead) % kNetFrameAlign, offset) << bytes << " bytes";
      } else {
        EXPECT_EQ(header.lead, 0) << bytes << " bytes";
      }
      EXPECT_EQ(checkNetFrameHeader(header, 0, 1 << 20), "");
    }
  }
}

TEST_F(HostilePeerTest, PaddingPastItsBoundIsAnError) {
  coll::Fd fd = connectAndProve(goodHello());
  sendHeader(fd.get(), kNetFrameData, 0, 8, /*lead=*/kNetFrameAlign, /*trail=*/0);
  std::string message = waitForFailure();
  EXPECT_NE(message.find("64 and 0 bytes of padding"), std::string::npos) << message;
}

TEST_F(HostilePeerTest, GarbageIsAnError) {
  coll::Fd fd = connectAndProve(goodHello());
  const char garbage[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  send(fd.get(), garbage, sizeof(garbage));
  std::string message = waitForFailure();
  EXPECT_NE(message.find("unknown kind"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1"), std::string::npos) << message;
}

TEST_F(HostilePeerTest, OutOfOrderFrameIsAnError) {
  coll::Fd fd = connectAndProve(goodHello());
  sendHeader(fd.get(), kNetFrameData, 5, 8);
  EXPECT_NE(waitForFailure().find("frame number 5 where 0 was expected"), std::string::npos);
}

TEST_F(HostilePeerTest, TruncatedFrameIsAnError) {
  coll::Fd fd = connectAndProve(goodHello());
  sendHeader(fd.get(), kNetFrameData, 0, 1000);
  char partial[10] = {};
  send(fd.get(), partial, sizeof(partial));
  fd.reset();
  EXPECT_NE(waitForFailure().find("closed in the middle of a frame"), std::string::npos);
}

TEST_F(HostilePeerTest, TruncatedHeaderIsAnError) {
  coll::Fd fd = connectAndProve(goodHello());
  char partial[5] = {};
  send(fd.get(), partial, sizeof(partial));
  fd.reset();
  EXPECT_NE(waitForFailure().find("closed in the middle of a frame"), std::string::npos);
}

TEST_F(HostilePeerTest, ClosingFrameWithPayloadIsAnError) {
  coll::Fd fd = connectAndProve(goodHello());
  sendHeader(fd.get(), kNetFrameBye, 0, 64);
  EXPECT_NE(waitForFailure().find("closing frame with 64 payload bytes"), std::string::npos);
}

TEST_F(HostilePeerTest, GoodbyeThenCloseIsNotAFailure) {
  coll::Fd fd = connectAndProve(goodHello());
  sendHeader(fd.get(), kNetFrameBye, 0, 0);
  shutdown(fd.get(), SHUT_WR);
  connector_.join();
  ASSERT_EQ(setupError_, "");
  auto* recv = domain_->recvConnection(1);
  size_t bytes = 0;
  uint64_t tag = 0;
  for (auto deadline = Clock::now() + std::chrono::seconds(5); Clock::now() < deadline;) {
    recv->tryPeek(&bytes, &tag);
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
  coll::Fd real = connectAndProve(goodHello());
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
  coll::Fd real = connectAndProve(goodHello());
  connector_.join();
  EXPECT_EQ(setupError_, "");
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count(), 1000)
      << "the real peer waited behind the silent connections";
}

// A stranger that read the card (so knows the listener's nonce) but not the job's secret gets a
// challenge it cannot answer: it is refused, and the real rank 1 still connects.
TEST_F(HostilePeerTest, AWrongSecretIsRefusedAndTheRealPeerStillConnects) {
  std::array<uint8_t, 32> wrong = settings_.jobSecret;
  wrong[31] ^= 1;
  coll::Fd stranger = connectAndProve(goodHello(), wrong);
  coll::Fd real = connectAndProve(goodHello());
  connector_.join();
  EXPECT_EQ(setupError_, "");
  EXPECT_NO_THROW(domain_->checkPeers());
  char byte;
  EXPECT_EQ(coll::recvAll(stranger.get(), &byte, 1, coll::deadlineAfter(std::chrono::milliseconds(1000))),
            coll::IoStatus::kClosed)
      << "the stranger's connection was kept";
}

class HostilePeerTwoSocketsTest : public HostilePeerTest {
 protected:
  void SetUp() override {
    sockets_ = 2;
    HostilePeerTest::SetUp();
  }
};

// A handshake captured on one connection and replayed on another is refused: the listener's
// challenge is fresh, so the captured proof answers a question nobody asks any more.
TEST_F(HostilePeerTwoSocketsTest, AReplayedHandshakeIsRefused) {
  NetChallenge captured;
  NetProof capturedProof;
  coll::Fd real0 = connectAndProve(goodHello(0), settings_.jobSecret, &captured, &capturedProof);
  coll::Fd replay = connectAsRank1(goodHello(0));
  NetChallenge fresh = readChallenge(replay.get());
  EXPECT_NE(std::memcmp(fresh.listenerNonce, captured.listenerNonce, sizeof(fresh.listenerNonce)), 0);
  send(replay.get(), &capturedProof, sizeof(capturedProof));
  char byte;
  EXPECT_EQ(coll::recvAll(replay.get(), &byte, 1, coll::deadlineAfter(std::chrono::milliseconds(2000))),
            coll::IoStatus::kClosed)
      << "the replayed handshake was kept";
  coll::Fd real1 = connectAndProve(goodHello(1));
  connector_.join();
  EXPECT_EQ(setupError_, "");
  EXPECT_NO_THROW(domain_->checkPeers());
}

// The dialling side refuses a listener that cannot prove the secret (someone else listening at
// the published address), before it proves anything itself.
TEST(NetHandshake, ADiallerRefusesAListenerThatCannotProveTheSecret) {
  coll::Fd impostor = coll::listenOn("127.0.0.1", 0);
  const coll::SocketAddress where = coll::localAddressOf(impostor.get());
  uint64_t nonce[2] = {5, 6};
  NetCard card = makeNetCard(where.host(), where.port(), nonce);
  std::vector<PeerInfo> peers(2);
  for (int r = 0; r < 2; ++r) peers[r].rank = r;
  TransportSettings settings;
  settings.socketsPerPeer = 1;
  settings.timeoutMs = 2000;
  settings.jobSecret.fill(0x42);
  std::vector<uint8_t> afterHello;
  std::thread fake([&] {
    pollfd waitForDialler{impostor.get(), POLLIN, 0};
    if (poll(&waitForDialler, 1, 3000) != 1) return;
    coll::Fd fd(accept(impostor.get(), nullptr, nullptr));
    NetHello hello;
    if (coll::recvAll(fd.get(), &hello, sizeof(hello), coll::deadlineAfter(std::chrono::milliseconds(2000))) !=
        coll::IoStatus::kOk)
      return;
    NetChallenge challenge;  // a nonce and a made-up proof
    std::memset(challenge.listenerNonce, 0x5a, sizeof(challenge.listenerNonce));
    std::memset(challenge.listenerProof, 0x5a, sizeof(challenge.listenerProof));
    coll::sendAll(fd.get(), &challenge, sizeof(challenge), coll::deadlineAfter(std::chrono::milliseconds(1000)));
    uint8_t chunk[256];
    for (;;) {
      ssize_t n =
          coll::recvAll(fd.get(), chunk, 1, coll::deadlineAfter(std::chrono::milliseconds(1000))) == coll::IoStatus::kOk
              ? 1
              : 0;
      if (n == 0) return;
      afterHello.push_back(chunk[0]);
    }
  });
  Doorbell bell;  // before the domain: its progress thread rings it until the domain is gone
  NetDomain dialler(twoRankArgs(1, &peers, &settings));
  const std::string mine = dialler.card(0);
  std::string message;
  try {
    dialler.connect(0, {std::string(reinterpret_cast<const char*>(&card), sizeof(card)), mine},
                    coll::deadlineAfter(std::chrono::milliseconds(3000)));
    dialler.useDoorbell(&bell);
    dialler.sendConnection(0);  // the first use dials
    auto deadline = Clock::now() + std::chrono::seconds(3);
    while (Clock::now() < deadline) {
      dialler.checkPeers();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  } catch (const CollError& e) {
    message = e.what();
  }
  fake.join();
  EXPECT_NE(message.find("does not prove this job's secret"), std::string::npos) << message;
  EXPECT_TRUE(afterHello.empty()) << afterHello.size() << " bytes sent to the impostor after the hello";
}

// Setup waits for no one: a peer that never dials leaves its connection empty, and the caller's
// wait ends at the caller's deadline (the executor's timeout), not in setup.
TEST_F(HostilePeerTest, NoPeerMeansSetupReturnsAndNothingArrives) {
  connector_.join();
  EXPECT_EQ(setupError_, "");
  RecvConnection* recv = domain_->recvConnection(1);
  auto until = Clock::now() + std::chrono::milliseconds(200);
  while (Clock::now() < until) {
    size_t bytes = 0;
    uint64_t tag = 0;
    EXPECT_EQ(recv->tryPeek(&bytes, &tag), nullptr);
    EXPECT_NO_THROW(domain_->checkPeers());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(domain_->usage().resources, 0);
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
