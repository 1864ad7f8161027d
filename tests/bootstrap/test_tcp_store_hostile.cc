// What a confused or hostile peer can do to the rendezvous store: every malformed connection is
// closed on its own and well-behaved clients keep being served.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "bootstrap/store_protocol.h"
#include "bootstrap/tcp_store.h"
#include "common/socket.h"
#include "test_helpers.h"
#include "tests/common/process_usage.h"

namespace coll {
namespace bootstrap {
namespace {

using testing::expectCollError;
using testing::in;
using testing::msSince;
using testing::toBytes;
using testing::toString;
using wire::FrameWriter;
using wire::Op;

Secret secretOf(uint8_t v) {
  Secret s{};
  s.fill(v);
  return s;
}

class HostileClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TcpStoreServer>("127.0.0.1", 0, secretOf(7));
    good_ = std::make_unique<TcpStoreClient>("127.0.0.1", server_->port(), secretOf(7), in(5000));
    good_->set("before", toBytes("1"));
  }

  Fd rawConnect() { return connectWithDeadline("127.0.0.1", server_->port(), in(2000)); }

  static void sendBytes(const Fd& fd, const Bytes& bytes) {
    ASSERT_EQ(sendAll(fd.get(), bytes.data(), bytes.size(), in(2000)), IoStatus::kOk);
  }

  // Reads until EOF or reset; returns everything received before it, or fails after 3 s.
  static Bytes readUntilClosed(const Fd& fd) {
    Bytes received;
    auto deadline = in(3000);
    while (Clock::now() < deadline) {
      pollfd pfd{fd.get(), POLLIN, 0};
      if (poll(&pfd, 1, pollTimeoutMs(deadline)) <= 0) break;
      uint8_t chunk[4096];
      ssize_t n = recv(fd.get(), chunk, sizeof(chunk), 0);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) return received;
      if (n < 0 && errno != EAGAIN && errno != EINTR) return received;
      if (n > 0) received.insert(received.end(), chunk, chunk + n);
    }
    ADD_FAILURE() << "the server did not close the connection";
    return received;
  }

  // Sends a hello and returns the store's challenge frame.
  static Bytes helloAndChallenge(const Fd& fd, const wire::Nonce& clientNonce) {
    sendBytes(fd, wire::encodeHello(clientNonce));
    Bytes challenge(wire::kHeaderBytes + wire::kOpAndSeqBytes + 64);
    EXPECT_EQ(recvAll(fd.get(), challenge.data(), challenge.size(), in(2000)), IoStatus::kOk);
    return challenge;
  }

  // Runs the challenge-response with the right secret and consumes the hello-ok reply.
  void authenticate(const Fd& fd) {
    const wire::Nonce clientNonce = testing::nonceOf(3);
    sendBytes(fd, testing::proofFrameFor(helloAndChallenge(fd, clientNonce), secretOf(7), clientNonce));
    uint8_t reply[wire::kHeaderBytes + wire::kOpAndSeqBytes];
    ASSERT_EQ(recvAll(fd.get(), reply, sizeof(reply), in(2000)), IoStatus::kOk);
    ASSERT_EQ(reply[4], static_cast<uint8_t>(Op::kHelloOk));
  }

  // The store still serves the client connected before, and a new one.
  void expectStillServing() {
    good_->set("after", toBytes("2"));
    EXPECT_EQ(toString(good_->get("before", in(2000))), "1");
    TcpStoreClient fresh("127.0.0.1", server_->port(), secretOf(7), in(2000));
    EXPECT_EQ(toString(fresh.get("after", in(2000))), "2");
    int64_t counted = fresh.add("n", 1);
    EXPECT_EQ(good_->add("n", 0), counted);
  }

  static Bytes header(uint32_t bodyBytes) {
    Bytes h(4);
    for (int i = 0; i < 4; ++i) h[i] = static_cast<uint8_t>(bodyBytes >> (8 * i));
    return h;
  }

  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<TcpStoreClient> good_;
};

TEST_F(HostileClientTest, GarbageBeforeHello) {
  Fd fd = rawConnect();
  sendBytes(fd, toBytes("GET / HTTP/1.1\r\nHost: store\r\n\r\n"));
  EXPECT_TRUE(readUntilClosed(fd).empty());
  expectStillServing();
}

TEST_F(HostileClientTest, TruncatedHelloThenHalfClose) {
  Fd fd = rawConnect();
  Bytes hello = wire::encodeHello(testing::nonceOf(7));
  hello.resize(12);
  sendBytes(fd, hello);
  shutdown(fd.get(), SHUT_WR);
  EXPECT_TRUE(readUntilClosed(fd).empty());
  expectStillServing();
}

TEST_F(HostileClientTest, TruncatedRequestThenClose) {
  {
    Fd fd = rawConnect();
    authenticate(fd);
    Bytes set = FrameWriter(Op::kSet, 1).str("k").bytes(Bytes(1000, 1)).finish();
    set.resize(set.size() / 2);
    sendBytes(fd, set);
  }  // closed mid-frame
  expectStillServing();
  EXPECT_FALSE(good_->check({"k"}));
}

TEST_F(HostileClientTest, OversizedLengthPrefixBeforeAndAfterHello) {
  Fd before = rawConnect();
  sendBytes(before, header(1000));  // a hello is 43 bytes; the server must not wait for 1000
  EXPECT_TRUE(readUntilClosed(before).empty());

  Fd after = rawConnect();
  authenticate(after);
  sendBytes(after, header(0xfffffff0u));
  EXPECT_TRUE(readUntilClosed(after).empty());
  expectStillServing();
}

TEST_F(HostileClientTest, LengthPrefixTooSmall) {
  Fd fd = rawConnect();
  authenticate(fd);
  Bytes frame = header(2);
  frame.push_back(static_cast<uint8_t>(Op::kGet));
  frame.push_back(0);
  sendBytes(fd, frame);
  EXPECT_TRUE(readUntilClosed(fd).empty());
  expectStillServing();
}

TEST_F(HostileClientTest, WrongMagic) {
  Fd fd = rawConnect();
  sendBytes(fd, wire::encodeHello(testing::nonceOf(7), 0xdeadbeef));
  EXPECT_TRUE(readUntilClosed(fd).empty());  // not even a rejection: it is not our protocol
  expectStillServing();
}

// A flood of bad connections costs the log a few lines, not one per connection (before: 41,771
// lines in 30 s).
TEST_F(HostileClientTest, AFloodOfBadConnectionsLogsAFewLines) {
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 200; ++i) {
    Fd fd = rawConnect();
    sendBytes(fd, wire::encodeHello(testing::nonceOf(7), 0xdeadbeef));
    readUntilClosed(fd);
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  size_t lines = 0;
  for (size_t at = log.find("rendezvous store"); at != std::string::npos; at = log.find("rendezvous store", at + 1))
    ++lines;
  EXPECT_GE(lines, 1u) << log;
  EXPECT_LE(lines, 11u) << "one warning per bad connection:\n" << log.substr(0, 2000);
  EXPECT_NE(log.find("further warnings in this interval are counted"), std::string::npos) << log.substr(0, 2000);
  expectStillServing();
}

TEST_F(HostileClientTest, RequestBeforeHello) {
  Fd fd = rawConnect();
  sendBytes(fd, FrameWriter(Op::kGet, 1).u32(0).str("before").finish());
  EXPECT_TRUE(readUntilClosed(fd).empty());
  expectStillServing();
}

TEST_F(HostileClientTest, UnknownOpcode) {
  Fd fd = rawConnect();
  authenticate(fd);
  sendBytes(fd, FrameWriter(static_cast<Op>(0xee), 1).str("x").finish());
  EXPECT_TRUE(readUntilClosed(fd).empty());
  // A server-to-client opcode sent by a client is just as unknown.
  Fd fd2 = rawConnect();
  authenticate(fd2);
  sendBytes(fd2, FrameWriter(Op::kValue, 1).bytes(Bytes{1}).finish());
  EXPECT_TRUE(readUntilClosed(fd2).empty());
  expectStillServing();
}

TEST_F(HostileClientTest, FieldLengthsThatLie) {
  // A key length pointing past the end of the frame.
  Fd fd = rawConnect();
  authenticate(fd);
  sendBytes(fd, FrameWriter(Op::kSet, 1).u32(1000).raw("abc", 3).finish());
  EXPECT_TRUE(readUntilClosed(fd).empty());
  // A key longer than kMaxKeyBytes inside a frame that really holds it.
  Fd fd2 = rawConnect();
  authenticate(fd2);
  sendBytes(fd2, FrameWriter(Op::kSet, 1).str(std::string(kMaxKeyBytes + 1, 'k')).bytes(Bytes{}).finish());
  EXPECT_TRUE(readUntilClosed(fd2).empty());
  // Four billion keys announced in a small frame.
  Fd fd3 = rawConnect();
  authenticate(fd3);
  sendBytes(fd3, FrameWriter(Op::kCheck, 1).u32(0xffffffffu).str("a").finish());
  EXPECT_TRUE(readUntilClosed(fd3).empty());
  // Trailing bytes after a complete get.
  Fd fd4 = rawConnect();
  authenticate(fd4);
  sendBytes(fd4, FrameWriter(Op::kGet, 1).u32(0).str("before").u8(0).finish());
  EXPECT_TRUE(readUntilClosed(fd4).empty());
  expectStillServing();
}

TEST_F(HostileClientTest, DisconnectWhileWaitingDoesNotDisturbOthers) {
  {
    Fd fd = rawConnect();
    authenticate(fd);
    sendBytes(fd, FrameWriter(Op::kGet, 1).u32(60000).str("later").finish());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }  // parked get abandoned
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    TcpStoreClient c("127.0.0.1", server_->port(), secretOf(7), in(2000));
    c.set("later", toBytes("v"));
  });
  EXPECT_EQ(toString(good_->get("later", in(3000))), "v");
  setter.join();
  expectStillServing();
}

TEST_F(HostileClientTest, ClientThatDoesNotReadRepliesIsThrottledNotServedForever) {
  // 20,000 pipelined gets of a 1 KiB value make 20 MiB of replies. The server must stop reading
  // this client while its replies back up, keep serving others, and still answer every request
  // once the client reads.
  constexpr int kRequests = 20000;
  good_->set("kib", Bytes(1024, 0x5a));
  Fd fd = rawConnect();
  authenticate(fd);
  Bytes burst;
  for (int i = 0; i < kRequests; ++i) {
    Bytes frame = FrameWriter(Op::kGet, static_cast<uint32_t>(i + 1)).u32(0).str("kib").finish();
    burst.insert(burst.end(), frame.begin(), frame.end());
  }
  IoStatus sent = IoStatus::kTimeout;
  std::thread sender([&] { sent = sendAll(fd.get(), burst.data(), burst.size(), in(8000)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto start = Clock::now();
  expectStillServing();
  EXPECT_LT(msSince(start), 1000);

  int replies = 0;
  uint32_t lastSeq = 0;
  bool inOrder = true;
  Bytes buffer;
  auto deadline = in(8000);
  while (replies < kRequests && Clock::now() < deadline) {
    uint8_t chunk[65536];
    pollfd pfd{fd.get(), POLLIN, 0};
    if (poll(&pfd, 1, pollTimeoutMs(deadline)) <= 0) break;
    ssize_t n = recv(fd.get(), chunk, sizeof(chunk), 0);
    if (n <= 0) break;
    buffer.insert(buffer.end(), chunk, chunk + n);
    size_t offset = 0, frameBytes = 0;
    while (wire::checkFrame(buffer.data() + offset, buffer.size() - offset, 1 << 20, &frameBytes) ==
           wire::FrameCheck::kComplete) {
      wire::FrameReader r(buffer.data() + offset + wire::kHeaderBytes, frameBytes - wire::kHeaderBytes);
      EXPECT_EQ(r.u8(), static_cast<uint8_t>(Op::kValue));
      uint32_t seq = r.u32();
      inOrder &= seq == lastSeq + 1;
      lastSeq = seq;
      EXPECT_EQ(r.bytes(4096).size(), 1024u);
      ++replies;
      offset += frameBytes;
    }
    buffer.erase(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(offset));
  }
  sender.join();
  EXPECT_EQ(sent, IoStatus::kOk);
  EXPECT_EQ(replies, kRequests);
  EXPECT_TRUE(inOrder);
}

// Every client slot taken by connections that never say hello (before: each held its slot 30 s,
// and the next real rank was refused): the real client still gets in, at once.
TEST_F(HostileClientTest, IdleConnectionsInEverySlotDoNotKeepARealClientOut) {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  const rlim_t needed = 2 * TcpStoreServer::kMaxClients + 256;  // both ends live in this process
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed)
    GTEST_SKIP() << "the descriptor limit (hard " << limit.rlim_max << ") is below the " << needed << " this needs";
  const rlim_t saved = limit.rlim_cur;
  limit.rlim_cur = std::max<rlim_t>(limit.rlim_cur, needed);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
  {
    std::vector<Fd> idle;
    for (size_t i = 0; i + 1 < TcpStoreServer::kMaxClients; ++i) idle.push_back(rawConnect());  // + good_
    const auto start = Clock::now();
    TcpStoreClient real("127.0.0.1", server_->port(), secretOf(7), in(5000));
    EXPECT_EQ(toString(real.get("before", in(2000))), "1");
    EXPECT_LT(msSince(start), 2000) << "the real client waited for an idle connection's slot";
    expectStillServing();
  }
  limit.rlim_cur = saved;
  setrlimit(RLIMIT_NOFILE, &limit);
}

// An authenticated client that floods the store with 64 MiB values under new keys is refused
// once the store holds its limit, and the store's memory stays there (before: every value was
// kept; 20 of them are 1.3 GB).
TEST(TcpStoreLimits, AFloodingClientIsRefusedAtTheStoresLimit) {
  testing::EnvGuard env({"COLL_STORE_MAX_BYTES"});
  env.set("COLL_STORE_MAX_BYTES", std::to_string(size_t{100} << 20));
  TcpStoreServer server("127.0.0.1", 0, secretOf(7));
  TcpStoreClient client("127.0.0.1", server.port(), secretOf(7), in(5000));
  const size_t before = colltest::residentKiB() / 1024;
  Bytes value(kMaxValueBytes, 0x5a);
  int refused = 0;
  std::string message;
  for (int i = 0; i < 20; ++i) {
    try {
      client.set("flood/" + std::to_string(i), value);
    } catch (const CollError& e) {
      EXPECT_EQ(e.code(), collInvalidUsage);
      message = e.what();
      ++refused;
    }
  }
  const size_t after = colltest::residentKiB() / 1024;
  const size_t grown = after - std::min(before, after);
  EXPECT_EQ(refused, 19) << "the limit is 100 MiB: one 64 MiB value fits";
  EXPECT_NE(message.find("the rendezvous store is full"), std::string::npos) << message;
  EXPECT_NE(message.find("COLL_STORE_MAX_BYTES"), std::string::npos) << message;
  // The stored value and the buffers of one request in flight; not 20 values.
  EXPECT_LT(grown, 400u) << "the process grew by " << grown << " MiB";
  // Still serving: what fits is written, what is there is read.
  client.set("small", toBytes("ok"));
  EXPECT_EQ(toString(client.get("small", in(2000))), "ok");
  EXPECT_EQ(client.get("flood/0", in(2000)).size(), kMaxValueBytes);
}

// An authenticated client flooding the store is stopped at its share, before the store is full,
// so another rank can still write its card (before: the flooder took all 200 MiB and the other
// rank's write was refused as "full").
TEST(TcpStoreLimits, AFloodingClientLeavesTheOtherRanksRoom) {
  testing::EnvGuard env({"COLL_STORE_MAX_BYTES", "COLL_STORE_MAX_CLIENT_BYTES"});
  env.set("COLL_STORE_MAX_BYTES", std::to_string(size_t{200} << 20));  // default share: one largest value
  TcpStoreServer server("127.0.0.1", 0, secretOf(7));
  TcpStoreClient flooder("127.0.0.1", server.port(), secretOf(7), in(5000));
  TcpStoreClient rank("127.0.0.1", server.port(), secretOf(7), in(5000));
  Bytes value(kMaxValueBytes, 0x5a);
  flooder.set("flood/0", value);
  std::string message = expectCollError(collInvalidUsage, [&] { flooder.set("flood/1", value); });
  EXPECT_NE(message.find("share of the rendezvous store is used up"), std::string::npos) << message;
  EXPECT_NE(message.find("COLL_STORE_MAX_CLIENT_BYTES"), std::string::npos) << message;
  rank.set("card", value);
  // A deadline for a loaded machine under ThreadSanitizer, where the largest value takes seconds;
  // the test is about room, not speed.
  EXPECT_EQ(rank.get("card", in(30000)).size(), kMaxValueBytes);
  // The flooder can still replace what it holds with something smaller.
  flooder.set("flood/0", toBytes("small"));
  EXPECT_EQ(toString(flooder.get("flood/0", in(2000))), "small");
}

TEST_F(HostileClientTest, WrongSecretIsRejectedWithAClearMessage) {
  auto start = Clock::now();
  std::string message = expectCollError(
      collInvalidUsage, [&] { TcpStoreClient intruder("127.0.0.1", server_->port(), secretOf(8), in(5000)); });
  EXPECT_LT(msSince(start), 2000);
  std::string expected = "wrong secret: the rendezvous store at 127.0.0.1:" + std::to_string(server_->port()) +
                         " does not hold this rank's secret";
  EXPECT_NE(message.find(expected), std::string::npos) << message;
  expectStillServing();
  EXPECT_FALSE(good_->check({"intruder"}));
}

TEST_F(HostileClientTest, WrongSecretGetsARejectFrameThenClose) {
  Fd fd = rawConnect();
  Secret wrong = secretOf(7);
  wrong[31] ^= 1;  // differs only in the last byte
  const wire::Nonce clientNonce = testing::nonceOf(5);
  Bytes challenge = helloAndChallenge(fd, clientNonce);
  const Digest256 proof =
      wire::helloProof(wrong, wire::ProofRole::kClient, clientNonce, testing::challengeNonceOf(challenge));
  sendBytes(fd, FrameWriter(Op::kHelloProof, 0).raw(proof.data(), proof.size()).finish());
  Bytes received = readUntilClosed(fd);
  ASSERT_GE(received.size(), wire::kHeaderBytes + wire::kOpAndSeqBytes + 1);
  EXPECT_EQ(received[4], static_cast<uint8_t>(Op::kHelloReject));
  EXPECT_EQ(received[9], static_cast<uint8_t>(wire::RejectReason::kWrongSecret));
  // Requests pipelined behind a proof are never executed when the proof is wrong, nor ones sent
  // with no proof at all.
  Fd fd2 = rawConnect();
  Bytes challenge2 = helloAndChallenge(fd2, clientNonce);
  const Digest256 proof2 =
      wire::helloProof(wrong, wire::ProofRole::kClient, clientNonce, testing::challengeNonceOf(challenge2));
  Bytes both = FrameWriter(Op::kHelloProof, 0).raw(proof2.data(), proof2.size()).finish();
  Bytes set = FrameWriter(Op::kSet, 1).str("intruder").bytes(Bytes{1}).finish();
  both.insert(both.end(), set.begin(), set.end());
  sendBytes(fd2, both);
  readUntilClosed(fd2);
  Fd fd3 = rawConnect();
  helloAndChallenge(fd3, clientNonce);
  sendBytes(fd3, set);
  EXPECT_TRUE(readUntilClosed(fd3).empty());
  EXPECT_FALSE(good_->check({"intruder"}));
}

// A captured exchange replayed on a new connection is refused: the store's challenge is fresh, so
// the captured proof answers a question nobody asks any more.
TEST_F(HostileClientTest, ReplayedHelloAndProofAreRefused) {
  const wire::Nonce clientNonce = testing::nonceOf(11);
  Fd original = rawConnect();
  Bytes challenge = helloAndChallenge(original, clientNonce);
  Bytes capturedProof = testing::proofFrameFor(challenge, secretOf(7), clientNonce);
  sendBytes(original, capturedProof);
  uint8_t ok[wire::kHeaderBytes + wire::kOpAndSeqBytes];
  ASSERT_EQ(recvAll(original.get(), ok, sizeof(ok), in(2000)), IoStatus::kOk);
  ASSERT_EQ(ok[4], static_cast<uint8_t>(Op::kHelloOk));

  Fd replay = rawConnect();
  Bytes secondChallenge = helloAndChallenge(replay, clientNonce);
  EXPECT_NE(testing::challengeNonceOf(secondChallenge), testing::challengeNonceOf(challenge));
  Bytes both = capturedProof;
  Bytes set = FrameWriter(Op::kSet, 1).str("replayed").bytes(Bytes{1}).finish();
  both.insert(both.end(), set.begin(), set.end());
  sendBytes(replay, both);
  Bytes received = readUntilClosed(replay);
  ASSERT_GE(received.size(), wire::kHeaderBytes + wire::kOpAndSeqBytes + 1);
  EXPECT_EQ(received[4], static_cast<uint8_t>(Op::kHelloReject));
  EXPECT_EQ(received[9], static_cast<uint8_t>(wire::RejectReason::kWrongSecret));
  EXPECT_FALSE(good_->check({"replayed"}));
}

// Relays one client connection to the store and records what the client sent.
class RecordingRelay {
 public:
  explicit RecordingRelay(uint16_t storePort) : listener_(listenOn("127.0.0.1", 0)), storePort_(storePort) {
    port_ = localAddressOf(listener_.get()).port();
    thread_ = std::thread([this] { run(); });
  }
  ~RecordingRelay() {
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return port_; }
  // Waits for the client to close its connection; returns everything it sent.
  Bytes finish() {
    thread_.join();
    return fromClient_;
  }

 private:
  void run() {
    pollfd waitForClient{listener_.get(), POLLIN, 0};
    if (poll(&waitForClient, 1, 5000) != 1) return;  // the listener is non-blocking
    Fd client(accept(listener_.get(), nullptr, nullptr));
    Fd store = connectWithDeadline("127.0.0.1", storePort_, in(2000));
    auto deadline = in(10000);
    while (Clock::now() < deadline) {
      pollfd fds[2] = {{client.get(), POLLIN, 0}, {store.get(), POLLIN, 0}};
      if (poll(fds, 2, 100) <= 0) continue;
      uint8_t chunk[65536];
      for (int i = 0; i < 2; ++i) {
        if (fds[i].revents == 0) continue;
        ssize_t n = recv(fds[i].fd, chunk, sizeof(chunk), 0);
        if (n <= 0) return;
        if (i == 0) fromClient_.insert(fromClient_.end(), chunk, chunk + n);
        sendAll(fds[1 - i].fd, chunk, static_cast<size_t>(n), in(2000));
      }
    }
  }
  Fd listener_;
  uint16_t storePort_;
  uint16_t port_ = 0;
  Bytes fromClient_;
  std::thread thread_;
};

// The secret never crosses the wire: nothing the client sends contains it, or any 8 bytes of it.
TEST_F(HostileClientTest, TheSecretNeverCrossesTheWire) {
  Secret secret{};
  for (size_t i = 0; i < secret.size(); ++i) secret[i] = static_cast<uint8_t>(0xa0 + i);
  TcpStoreServer server("127.0.0.1", 0, secret);
  RecordingRelay relay(server.port());
  {
    TcpStoreClient client("127.0.0.1", relay.port(), secret, in(5000));
    client.set("k", toBytes("v"));
  }
  const Bytes sent = relay.finish();
  ASSERT_GT(sent.size(), wire::kHelloBodyBytes);  // the relay saw the handshake and the set
  for (size_t at = 0; at + 8 <= secret.size(); ++at) {
    EXPECT_EQ(std::search(sent.begin(), sent.end(), secret.begin() + at, secret.begin() + at + 8), sent.end())
        << "secret bytes " << at << ".." << at + 7 << " were sent";
  }
  TcpStoreClient direct("127.0.0.1", server.port(), secret, in(2000));
  EXPECT_EQ(toString(direct.get("k", in(2000))), "v");
}

// A listener posing as the store without the secret cannot answer the challenge: the client
// refuses it before proving anything, so the impostor learns nothing it could use elsewhere.
TEST(TcpStoreConnect, ImpostorStoreIsRefusedBeforeTheClientProvesAnything) {
  Fd listener = listenOn("127.0.0.1", 0);
  const uint16_t port = localAddressOf(listener.get()).port();
  Bytes afterHello;
  std::thread impostor([&] {
    pollfd waitForClient{listener.get(), POLLIN, 0};
    if (poll(&waitForClient, 1, 5000) != 1) return;
    Fd fd(accept(listener.get(), nullptr, nullptr));
    Bytes hello(wire::kHeaderBytes + wire::kHelloBodyBytes);
    if (recvAll(fd.get(), hello.data(), hello.size(), in(2000)) != IoStatus::kOk) return;
    Bytes challenge = FrameWriter(Op::kHelloChallenge, hello[5]).raw(Bytes(64, 0x5a).data(), 64).finish();
    sendAll(fd.get(), challenge.data(), challenge.size(), in(2000));
    for (auto deadline = in(3000); Clock::now() < deadline;) {
      pollfd pfd{fd.get(), POLLIN, 0};
      if (poll(&pfd, 1, 100) <= 0) continue;
      uint8_t chunk[256];
      ssize_t n = recv(fd.get(), chunk, sizeof(chunk), 0);
      if (n <= 0) return;
      afterHello.insert(afterHello.end(), chunk, chunk + n);
    }
  });
  std::string message =
      expectCollError(collInvalidUsage, [&] { TcpStoreClient client("127.0.0.1", port, secretOf(7), in(3000)); });
  impostor.join();
  EXPECT_NE(message.find("wrong secret"), std::string::npos) << message;
  EXPECT_TRUE(afterHello.empty()) << afterHello.size() << " bytes sent to the impostor after the hello";
}

TEST_F(HostileClientTest, VersionMismatchIsRejected) {
  Fd fd = rawConnect();
  sendBytes(fd, wire::encodeHello(testing::nonceOf(7), wire::kMagic, 99));
  Bytes received = readUntilClosed(fd);
  ASSERT_GE(received.size(), 10u);
  EXPECT_EQ(received[4], static_cast<uint8_t>(Op::kHelloReject));
  EXPECT_EQ(received[9], static_cast<uint8_t>(wire::RejectReason::kVersionMismatch));
}

TEST(TcpStoreConnect, AbsentStoreTimesOutNamingTheAddress) {
  uint16_t port;
  {
    Fd probe = listenOn("127.0.0.1", 0);
    port = localAddressOf(probe.get()).port();
  }
  auto start = Clock::now();
  std::string message =
      expectCollError(collTimeout, [&] { TcpStoreClient c("127.0.0.1", port, secretOf(1), in(400)); });
  EXPECT_GE(msSince(start), 390);
  EXPECT_LT(msSince(start), 1500);
  EXPECT_NE(message.find("no rendezvous store at 127.0.0.1:" + std::to_string(port) + " after"), std::string::npos)
      << message;
}

TEST(TcpStoreConnect, ClientWaitsForAStoreThatStartsLater) {
  uint16_t port;
  {
    Fd probe = listenOn("127.0.0.1", 0);
    port = localAddressOf(probe.get()).port();
  }
  std::unique_ptr<TcpStoreServer> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    server = std::make_unique<TcpStoreServer>("127.0.0.1", port, secretOf(1));
  });
  TcpStoreClient client("127.0.0.1", port, secretOf(1), in(5000));
  starter.join();
  client.set("k", toBytes("v"));
  EXPECT_EQ(toString(client.get("k", in(1000))), "v");
}

TEST(TcpStoreConnect, SilentListenerTimesOut) {
  // Something accepts connections but never answers the hello.
  Fd listener = listenOn("127.0.0.1", 0);
  uint16_t port = localAddressOf(listener.get()).port();
  auto start = Clock::now();
  std::string message =
      expectCollError(collTimeout, [&] { TcpStoreClient c("127.0.0.1", port, secretOf(1), in(300)); });
  EXPECT_GE(msSince(start), 290);
  EXPECT_LT(msSince(start), 1500);
  EXPECT_NE(message.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << message;
}

}  // namespace
}  // namespace bootstrap
}  // namespace coll
