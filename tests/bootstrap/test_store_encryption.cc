// The rendezvous store under COLL_NET_ENCRYPT=1 (store_protocol.h): a relay between client and
// store sees neither a key nor a value in either direction (and sees both in plaintext, which
// shows the relay would); the store refuses a record altered, replayed or sent in plaintext once
// the connection encrypts; a client without a secret is refused before it connects; and the
// ranks' own bootstrap links (rank_link.h) seal their records where either end asks.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>

#include "bootstrap/rank_link.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/store_service.h"
#include "bootstrap/tcp_store.h"
#include "recording_relay.h"
#include "test_helpers.h"

namespace coll {
namespace bootstrap {
namespace {

using testing::in;
using testing::toBytes;
using testing::toString;
using wire::FrameWriter;
using wire::Op;

const std::string kKey = "a-known-key-of-this-test";
const std::string kValue = "a-known-value-of-this-test";

bool contains(const Bytes& wire, const std::string& text) {
  return std::search(wire.begin(), wire.end(), text.begin(), text.end()) != wire.end();
}

Secret testSecret() {
  Secret secret{};
  for (size_t i = 0; i < secret.size(); ++i) secret[i] = static_cast<uint8_t>(0x30 + i);
  return secret;
}

// Sets and reads back the known key through a relay; returns what each side sent.
std::pair<Bytes, Bytes> trafficOf(bool encrypt) {
  const Secret secret = testSecret();
  TcpStoreServer server("127.0.0.1", 0, secret);
  testing::RecordingRelay relay(server.port());
  {
    TcpStoreClient client("127.0.0.1", relay.port(), secret, in(5000), encrypt);
    client.set(kKey, toBytes(kValue));
    EXPECT_EQ(toString(client.get(kKey, in(2000))), kValue);
    EXPECT_TRUE(client.check({kKey}));
  }
  Bytes fromClient = relay.finish();
  return {fromClient, relay.fromStore()};
}

TEST(StoreEncryption, TheWireCarriesNoKeyOrValue) {
  const auto plain = trafficOf(false);
  ASSERT_TRUE(contains(plain.first, kKey) && contains(plain.first, kValue) && contains(plain.second, kValue))
      << "the relay does not see plaintext traffic: the check below would prove nothing";
  const auto sealed = trafficOf(true);
  ASSERT_GT(sealed.first.size(), kKey.size() + kValue.size());
  for (const std::string& text : {kKey, kValue}) {
    EXPECT_FALSE(contains(sealed.first, text)) << "the client sent '" << text << "' in plaintext";
    EXPECT_FALSE(contains(sealed.second, text)) << "the store sent '" << text << "' in plaintext";
  }
}

TEST(StoreEncryption, AClientWithoutASecretIsRefused) {
  const std::string message = testing::expectCollError(
      collInvalidUsage, [] { TcpStoreClient("127.0.0.1", testing::freePort(), Secret{}, in(500), true); });
  EXPECT_NE(message.find("COLL_NET_ENCRYPT"), std::string::npos) << message;
  EXPECT_NE(message.find("COLL_STORE_SECRET"), std::string::npos) << message;
}

// The service alone, fed frames by hand as an encrypting client would send them.
class EncryptingClient {
 public:
  explicit EncryptingClient(StoreService& service) : service_(service) {
    const wire::Nonce clientNonce = testing::nonceOf(5);
    auto challenge = feed(wire::encodeHello(clientNonce));
    const wire::Nonce serverNonce = testing::challengeNonceOf(challenge.at(0).frame);
    const Digest256 proof = wire::helloProof(testSecret(), wire::ProofRole::kClient, clientNonce, serverNonce);
    EXPECT_EQ(feed(FrameWriter(Op::kHelloProof, 0).raw(proof.data(), proof.size()).finish()).size(), 1u);
    ciphers_ = makeRecordCiphers(wire::storeRecordKeys(testSecret(), clientNonce, serverNonce), RecordSide::kOpener);
    auto reply = feed(FrameWriter(Op::kEncrypt, 1).finish());
    EXPECT_TRUE(service.encrypted(kConn));
    EXPECT_EQ(opOf(reply.at(0).frame), static_cast<uint8_t>(Op::kOk));
  }
  std::vector<StoreService::Outgoing> feed(const Bytes& frame) {
    std::vector<StoreService::Outgoing> out;
    service_.handleFrame(kConn, "peer", frame.data() + wire::kHeaderBytes, frame.size() - wire::kHeaderBytes, &out);
    return out;
  }
  Bytes seal(Bytes frame) {
    wire::sealRecord(*ciphers_.seal, &frame);
    return frame;
  }
  // The op of a reply record, opened; 0 when it does not open.
  uint8_t opOf(Bytes record) {
    if (!wire::openRecord(*ciphers_.open, record.data(), record.size())) return 0;
    return record[wire::kHeaderBytes];
  }

  static constexpr StoreService::ConnId kConn = 7;

 private:
  StoreService& service_;
  RecordCiphers ciphers_;
};

TEST(StoreEncryption, SealedRequestsAreServedAndTheirRepliesSealed) {
  StoreService service(testSecret(), "test");
  EncryptingClient client(service);
  auto reply = client.feed(client.seal(FrameWriter(Op::kSet, 2).str(kKey).bytes(toBytes(kValue)).finish()));
  ASSERT_EQ(reply.size(), 1u);
  EXPECT_EQ(client.opOf(reply[0].frame), static_cast<uint8_t>(Op::kOk));
  reply = client.feed(client.seal(FrameWriter(Op::kGet, 3).u32(0).str(kKey).finish()));
  ASSERT_EQ(reply.size(), 1u);
  EXPECT_FALSE(contains(reply[0].frame, kValue));
  EXPECT_EQ(client.opOf(reply[0].frame), static_cast<uint8_t>(Op::kValue));
}

TEST(StoreEncryption, AlteredReplayedOrPlaintextRecordsAreRefused) {
  {
    StoreService service(testSecret(), "test");
    EncryptingClient client(service);
    Bytes record = client.seal(FrameWriter(Op::kSet, 2).str(kKey).bytes(toBytes(kValue)).finish());
    record[wire::kHeaderBytes + 3] ^= 1;
    EXPECT_THROW(client.feed(record), ProtocolError);
  }
  {
    StoreService service(testSecret(), "test");
    EncryptingClient client(service);
    const Bytes record = client.seal(FrameWriter(Op::kSet, 2).str(kKey).bytes(toBytes(kValue)).finish());
    client.feed(record);
    EXPECT_THROW(client.feed(record), ProtocolError) << "a replayed record was served";
  }
  {
    StoreService service(testSecret(), "test");
    EncryptingClient client(service);
    EXPECT_THROW(client.feed(FrameWriter(Op::kCheck, 2).u32(0).finish()), ProtocolError)
        << "a plaintext request was served on an encrypting connection";
  }
}

// A dialler and a listener joined by a socket pair, driven by hand until both are ready; then one
// records frame from the dialler, captured on the wire and handed on (altered or not).
struct LinkPair {
  LinkPair(bool diallerEncrypts, bool listenerEncrypts) {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    diallerCtx.secret = listenerCtx.secret = testSecret();
    diallerCtx.nranks = listenerCtx.nranks = 2;
    diallerCtx.rank = 1;
    listenerCtx.rank = 0;
    listenerCtx.token = ListenerToken{4};
    diallerCtx.encrypt = diallerEncrypts;
    listenerCtx.encrypt = listenerEncrypts;
    dialler = std::make_unique<RankLink>(Fd(fds[0]), 0, listenerCtx.token);
    listener = std::make_unique<RankLink>(Fd(fds[1]), "test");
    for (int round = 0; round < 100 && !(dialler->ready() && listener->ready()); ++round) {
      for (RankLink* link : {dialler.get(), listener.get()}) {
        link->onWritable();
        link->onReadable();
        link->advanceHandshake(link == dialler.get() ? diallerCtx : listenerCtx, [](int) { return true; });
      }
    }
    EXPECT_TRUE(dialler->ready() && listener->ready());
  }
  // Sends one records frame carrying `text`; returns its bytes as they crossed the socket, and
  // what the listener took from them after the test flipped a byte (with `tamper`) and passed
  // them on: the pair's two ends are the dialler's and the listener's sockets, so the test reads
  // at the listener's end and writes the bytes again at the dialler's.
  Bytes send(const std::string& text, std::optional<LinkFrame>* taken, bool tamper = false) {
    dialler->queue(FrameWriter(Op::kRankRecords, 0).str(text).finish());
    EXPECT_TRUE(dialler->onWritable());
    Bytes wire(1 << 16);
    const ssize_t n = recv(listener->fd(), wire.data(), wire.size(), 0);
    wire.resize(n > 0 ? static_cast<size_t>(n) : 0);
    Bytes forward = wire;
    if (tamper) forward[forward.size() / 2] ^= 1;
    EXPECT_EQ(::send(dialler->fd(), forward.data(), forward.size(), 0), static_cast<ssize_t>(forward.size()));
    try {
      listener->onReadable();
      *taken = listener->takeFrame();
    } catch (const LinkRefused& refused) {
      refusal = refused.why;
      taken->reset();
    }
    return wire;
  }
  std::string refusal;
  LinkContext diallerCtx, listenerCtx;
  std::unique_ptr<RankLink> dialler, listener;
};

TEST(StoreEncryption, BootstrapLinksSealTheirRecordsWhereEitherEndAsks) {
  for (const auto& [dialler, listener] :
       {std::pair<bool, bool>{false, false}, {true, false}, {false, true}, {true, true}}) {
    const bool sealed = dialler || listener;
    LinkPair pair(dialler, listener);
    EXPECT_EQ(pair.dialler->encrypted(), sealed);
    EXPECT_EQ(pair.listener->encrypted(), sealed);
    std::optional<LinkFrame> taken;
    const Bytes wire = pair.send(kValue, &taken);
    EXPECT_EQ(contains(wire, kValue), !sealed) << "dialler " << dialler << ", listener " << listener;
    ASSERT_TRUE(taken.has_value()) << pair.refusal;
    EXPECT_TRUE(contains(taken->fields, kValue));
  }
  LinkPair pair(true, true);
  std::optional<LinkFrame> taken;
  pair.send(kValue, &taken, /*tamper=*/true);
  EXPECT_FALSE(taken.has_value());
  EXPECT_NE(pair.refusal.find("failed authentication"), std::string::npos) << pair.refusal;
}

}  // namespace
}  // namespace bootstrap
}  // namespace coll
