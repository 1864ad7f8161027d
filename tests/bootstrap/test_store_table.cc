#include <gtest/gtest.h>

#include "bootstrap/store_counter.h"
#include "bootstrap/store_service.h"
#include "bootstrap/store_table.h"
#include "test_helpers.h"

namespace coll {
namespace bootstrap {
namespace {

using testing::toBytes;
using wire::FrameReader;
using wire::FrameWriter;
using wire::Op;

// Feeds one frame to the service as connection `conn` and returns the replies it produced.
std::vector<StoreService::Outgoing> feed(StoreService& service, StoreService::ConnId conn, const Bytes& frame,
                                         bool* keep = nullptr) {
  std::vector<StoreService::Outgoing> out;
  bool k =
      service.handleFrame(conn, "peer", frame.data() + wire::kHeaderBytes, frame.size() - wire::kHeaderBytes, &out);
  if (keep) *keep = k;
  return out;
}

uint8_t opOf(const StoreService::Outgoing& o) { return o.frame[wire::kHeaderBytes]; }

// Runs the whole challenge-response on `conn` with `secret`; returns the service's last reply.
std::vector<StoreService::Outgoing> authenticate(StoreService& service, StoreService::ConnId conn,
                                                 const Secret& secret, bool* keep = nullptr) {
  const wire::Nonce clientNonce = testing::nonceOf(static_cast<uint8_t>(conn));
  auto challenge = feed(service, conn, wire::encodeHello(clientNonce));
  if (challenge.size() != 1) {
    ADD_FAILURE() << "no single challenge";
    return challenge;
  }
  // Proves `secret` without checking the service's proof, so that a wrong secret reaches the proof.
  const Digest256 proof = wire::helloProof(secret, wire::ProofRole::kClient, clientNonce,
                                           testing::challengeNonceOf(challenge[0].frame));
  return feed(service, conn, wire::FrameWriter(Op::kHelloProof, 0).raw(proof.data(), proof.size()).finish(), keep);
}

TEST(StoreTable, WaiterWakesWhenItsLastKeyIsSet) {
  StoreTable table;
  std::vector<StoreTable::WaiterId> ready;
  auto far = Clock::now() + std::chrono::hours(1);
  auto ab = table.addWaiter({"a", "b", "a"}, far);
  auto b = table.addWaiter({"b"}, far);
  EXPECT_EQ(table.waiterCount(), 2u);
  table.set("a", toBytes("1"), &ready);
  EXPECT_TRUE(ready.empty());
  table.set("b", toBytes("2"), &ready);
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0], ab);
  EXPECT_EQ(ready[1], b);
  EXPECT_EQ(table.waiterCount(), 0u);
  EXPECT_EQ(table.nextDeadline(), Deadline::max());
}

TEST(StoreTable, ExpiryAndRemovalForgetWaiters) {
  StoreTable table;
  auto now = Clock::now();
  auto early = table.addWaiter({"x"}, now + std::chrono::milliseconds(10));
  auto late = table.addWaiter({"x"}, now + std::chrono::milliseconds(20));
  auto gone = table.addWaiter({"x", "y"}, now + std::chrono::milliseconds(30));
  EXPECT_EQ(table.nextDeadline(), now + std::chrono::milliseconds(10));
  table.removeWaiter(gone);
  table.removeWaiter(gone);  // unknown ids are ignored
  auto expired = table.takeExpired(now + std::chrono::milliseconds(15));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0], early);
  std::vector<StoreTable::WaiterId> ready;
  table.set("x", toBytes("v"), &ready);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0], late);
  EXPECT_TRUE(table.takeExpired(now + std::chrono::hours(1)).empty());
}

TEST(StoreTable, AddWakesWaitersAndRejectsNonCounters) {
  StoreTable table;
  std::vector<StoreTable::WaiterId> ready;
  auto w = table.addWaiter({"n"}, Clock::now() + std::chrono::hours(1));
  int64_t result = 0;
  ASSERT_EQ(table.add("n", 5, &result, &ready), StoreTable::WriteResult::kOk);
  EXPECT_EQ(result, 5);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0], w);
  EXPECT_EQ(*table.find("n"), toBytes("5"));
  table.set("s", toBytes("five"), &ready);
  EXPECT_EQ(table.add("s", 1, &result, &ready), StoreTable::WriteResult::kNotACounter);
  EXPECT_EQ(*table.find("s"), toBytes("five"));
}

// The table never holds more than its limit, keys included; a write that would pass it changes
// nothing, and a write that shrinks a value is always taken.
TEST(StoreTable, HoldsNoMoreThanItsLimit) {
  StoreTable table(1000);
  std::vector<StoreTable::WaiterId> ready;
  EXPECT_EQ(table.set("a", Bytes(600, 1), &ready), StoreTable::WriteResult::kOk);
  EXPECT_EQ(table.storedBytes(), 601u);
  EXPECT_EQ(table.set("b", Bytes(600, 2), &ready), StoreTable::WriteResult::kFull);
  EXPECT_EQ(table.find("b"), nullptr);
  EXPECT_EQ(table.storedBytes(), 601u);
  EXPECT_EQ(table.set("a", Bytes(998, 3), &ready), StoreTable::WriteResult::kOk);  // replacing: 999 bytes in all
  EXPECT_EQ(table.set("a", Bytes(1000, 4), &ready), StoreTable::WriteResult::kFull);
  EXPECT_EQ(table.find("a")->size(), 998u);
  EXPECT_EQ(table.set("a", Bytes(10, 5), &ready), StoreTable::WriteResult::kOk);  // shrinking
  int64_t result = 0;
  EXPECT_EQ(table.add("n", 1, &result, &ready), StoreTable::WriteResult::kOk);
  EXPECT_EQ(table.set("c", Bytes(1000 - table.storedBytes() - 1, 6), &ready), StoreTable::WriteResult::kOk);
  EXPECT_EQ(table.storedBytes(), 1000u);
  EXPECT_EQ(table.add("m", 1, &result, &ready), StoreTable::WriteResult::kFull);
  EXPECT_EQ(table.add("n", 1, &result, &ready), StoreTable::WriteResult::kOk);  // same size
  EXPECT_EQ(result, 2);
}

// Each writer's values count against its own share as well as the total: replacing someone
// else's value moves those bytes to the writer, reservations count like values, and a
// forgotten owner's values stay in the total.
TEST(StoreTable, EachOwnerHoldsNoMoreThanItsShare) {
  StoreTable table(1000, 400);
  std::vector<StoreTable::WaiterId> ready;
  EXPECT_EQ(table.set("a", Bytes(299, 1), &ready, 1), StoreTable::WriteResult::kOk);  // 300 with its key
  EXPECT_EQ(table.set("b", Bytes(199, 1), &ready, 1), StoreTable::WriteResult::kOverShare);
  EXPECT_EQ(table.find("b"), nullptr);
  EXPECT_EQ(table.bytesOf(1), 300u);
  EXPECT_EQ(table.set("a", Bytes(399, 1), &ready, 1), StoreTable::WriteResult::kOk);  // its own value grows to 400
  EXPECT_EQ(table.set("a", Bytes(299, 1), &ready, 1), StoreTable::WriteResult::kOk);
  EXPECT_EQ(table.set("c", Bytes(299, 2), &ready, 2), StoreTable::WriteResult::kOk);
  // Owner 2 replacing owner 1's value: the total would allow it, owner 2's share does not.
  EXPECT_EQ(table.set("a", Bytes(199, 2), &ready, 2), StoreTable::WriteResult::kOverShare);
  EXPECT_EQ(table.find("a")->front(), 1);
  EXPECT_EQ(table.set("a", Bytes(49, 2), &ready, 2), StoreTable::WriteResult::kOk);
  EXPECT_EQ(table.bytesOf(1), 0u);
  EXPECT_EQ(table.bytesOf(2), 350u);
  EXPECT_EQ(table.storedBytes(), 350u);
  // Reservations: held against the share and the total until released.
  EXPECT_EQ(table.reserve(2, 51), StoreTable::WriteResult::kOverShare);
  EXPECT_EQ(table.reserve(2, 50), StoreTable::WriteResult::kOk);
  EXPECT_EQ(table.set("d", Bytes(0, 2), &ready, 2), StoreTable::WriteResult::kOverShare);
  table.release(2, 50);
  EXPECT_EQ(table.bytesOf(2), 350u);
  EXPECT_EQ(table.storedBytes(), 350u);
  // The total still binds when no share does.
  EXPECT_EQ(table.set("e", Bytes(399, 3), &ready, 3), StoreTable::WriteResult::kOk);
  EXPECT_EQ(table.set("f", Bytes(299, 4), &ready, 4), StoreTable::WriteResult::kFull);
  // A forgotten owner's values stay, counted in the total; its account is gone.
  table.forgetOwner(3);
  EXPECT_EQ(table.bytesOf(3), 0u);
  EXPECT_EQ(table.storedBytes(), 750u);
  EXPECT_EQ(table.set("e", Bytes(9, 4), &ready, 4), StoreTable::WriteResult::kOk);
  EXPECT_EQ(table.storedBytes(), 360u);
  EXPECT_EQ(table.bytesOf(4), 10u);
}

TEST(StoreTable, TheDefaultShareIsAQuarterButAlwaysFitsOneLargestValue) {
  EXPECT_EQ(StoreTable::defaultMaxBytesPerOwner(size_t{1} << 30), size_t{1} << 28);
  EXPECT_EQ(StoreTable::defaultMaxBytesPerOwner(size_t{256} << 20), kMaxValueBytes + kMaxKeyBytes);
  EXPECT_EQ(StoreTable::defaultMaxBytesPerOwner(1000), 1000u);
}

TEST(StoreCounter, DecodesOnlyDecimalInt64) {
  int64_t v = 0;
  EXPECT_TRUE(decodeCounter(toBytes("-42"), &v));
  EXPECT_EQ(v, -42);
  EXPECT_TRUE(decodeCounter(toBytes("9223372036854775807"), &v));
  EXPECT_EQ(v, INT64_MAX);
  for (const char* bad : {"", "-", "1.5", " 1", "1 ", "+1", "99999999999999999999", "0x10", "--1"}) {
    EXPECT_FALSE(decodeCounter(toBytes(bad), &v)) << bad;
  }
  EXPECT_EQ(encodeCounter(INT64_MIN), toBytes("-9223372036854775808"));
}

TEST(StoreService, ParkedGetIsAnsweredOnAnotherConnectionsSet) {
  Secret secret{};
  secret[0] = 9;
  StoreService service(secret, "test");
  auto hello = authenticate(service, 1, secret);
  ASSERT_EQ(hello.size(), 1u);
  EXPECT_EQ(opOf(hello[0]), static_cast<uint8_t>(Op::kHelloOk));
  authenticate(service, 2, secret);
  EXPECT_TRUE(feed(service, 1, FrameWriter(Op::kGet, 7).u32(60000).str("k").finish()).empty());  // parked

  auto out = feed(service, 2, FrameWriter(Op::kSet, 3).str("k").bytes(toBytes("v")).finish());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].conn, 2u);  // the setter's own ok first
  EXPECT_EQ(opOf(out[0]), static_cast<uint8_t>(Op::kOk));
  EXPECT_EQ(out[1].conn, 1u);
  FrameReader r(out[1].frame.data() + wire::kHeaderBytes, out[1].frame.size() - wire::kHeaderBytes);
  EXPECT_EQ(r.u8(), static_cast<uint8_t>(Op::kValue));
  EXPECT_EQ(r.u32(), 7u);  // the parked request's sequence number
  EXPECT_EQ(r.bytes(100), toBytes("v"));
  EXPECT_TRUE(r.atEnd());
}

TEST(StoreService, ExpiryDisconnectAndWaiterCap) {
  Secret secret{};
  StoreService service(secret, "test");
  authenticate(service, 1, secret);
  feed(service, 1, FrameWriter(Op::kWait, 1).u32(10).u32(1).str("never").finish());
  std::vector<StoreService::Outgoing> out;
  service.expire(Clock::now() + std::chrono::seconds(1), &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(opOf(out[0]), static_cast<uint8_t>(Op::kNotFound));

  for (size_t i = 0; i < StoreService::kMaxWaitersPerClient; ++i) {
    feed(service, 1, FrameWriter(Op::kGet, 2).u32(60000).str("x").finish());
  }
  EXPECT_THROW(feed(service, 1, FrameWriter(Op::kGet, 3).u32(60000).str("x").finish()), ProtocolError);
  std::vector<StoreService::Outgoing> woken;
  service.disconnect(1, &woken);
  EXPECT_EQ(service.nextDeadline(), Deadline::max());  // every parked request forgotten
  EXPECT_FALSE(service.authenticated(1));
  EXPECT_THROW(feed(service, 1, FrameWriter(Op::kGet, 4).u32(0).str("x").finish()), ProtocolError);
}

TEST(StoreService, WrongSecretIsRejectedAndNotAuthenticated) {
  Secret secret{};
  StoreService service(secret, "test");
  Secret wrong{};
  wrong[5] = 1;
  bool keep = true;
  auto out = authenticate(service, 1, wrong, &keep);
  EXPECT_FALSE(keep);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(opOf(out[0]), static_cast<uint8_t>(Op::kHelloReject));
  EXPECT_FALSE(service.authenticated(1));
}

// A request before the proof, or a second hello, ends the connection: nothing runs unproven.
TEST(StoreService, NothingRunsBeforeTheProof) {
  Secret secret{};
  StoreService service(secret, "test");
  feed(service, 1, wire::encodeHello(testing::nonceOf(1)));
  EXPECT_THROW(feed(service, 1, FrameWriter(Op::kSet, 1).str("k").bytes(toBytes("v")).finish()), ProtocolError);
  feed(service, 2, wire::encodeHello(testing::nonceOf(2)));
  EXPECT_THROW(feed(service, 2, wire::encodeHello(testing::nonceOf(2))), ProtocolError);
  EXPECT_FALSE(service.authenticated(1));
  EXPECT_FALSE(service.authenticated(2));
}

// The challenge differs on every connection, so the proof of one is worthless on another.
TEST(StoreService, ChallengesAreFreshAndProofsDoNotCarryOver) {
  Secret secret{};
  secret[3] = 4;
  StoreService service(secret, "test");
  const wire::Nonce clientNonce = testing::nonceOf(9);
  auto first = feed(service, 1, wire::encodeHello(clientNonce));
  auto second = feed(service, 2, wire::encodeHello(clientNonce));  // the same hello, replayed
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(first[0].frame, second[0].frame);
  Bytes firstProof = testing::proofFrameFor(first[0].frame, secret, clientNonce);
  bool keep = true;
  auto replayed = feed(service, 2, firstProof, &keep);
  EXPECT_FALSE(keep);
  ASSERT_EQ(replayed.size(), 1u);
  EXPECT_EQ(opOf(replayed[0]), static_cast<uint8_t>(Op::kHelloReject));
  EXPECT_FALSE(service.authenticated(2));
  EXPECT_EQ(opOf(feed(service, 1, firstProof)[0]), static_cast<uint8_t>(Op::kHelloOk));
}

// kSetOnClose: the keys a connection left are set when it closes, and wake parked requests.
TEST(StoreService, KeysSetOnCloseAreSetWhenTheConnectionCloses) {
  Secret secret{};
  StoreService service(secret, "test");
  authenticate(service, 1, secret);
  authenticate(service, 2, secret);
  auto registered = feed(service, 1, FrameWriter(Op::kSetOnClose, 5).str("departed").bytes(toBytes("rank 1")).finish());
  ASSERT_EQ(registered.size(), 1u);
  EXPECT_EQ(opOf(registered[0]), static_cast<uint8_t>(Op::kOk));
  EXPECT_TRUE(feed(service, 2, FrameWriter(Op::kGet, 9).u32(60000).str("departed").finish()).empty());  // parked
  std::vector<StoreService::Outgoing> woken;
  service.disconnect(1, &woken);
  ASSERT_EQ(woken.size(), 1u);
  EXPECT_EQ(woken[0].conn, 2u);
  EXPECT_EQ(opOf(woken[0]), static_cast<uint8_t>(Op::kValue));
  // A later connection's notice for the same key does not replace the first one.
  authenticate(service, 3, secret);
  feed(service, 3, FrameWriter(Op::kSetOnClose, 7).str("departed").bytes(toBytes("rank 3")).finish());
  service.disconnect(3, &woken);
  auto first = feed(service, 2, FrameWriter(Op::kGet, 8).u32(0).str("departed").finish());
  ASSERT_EQ(first.size(), 1u);
  FrameReader r(first[0].frame.data() + wire::kHeaderBytes, first[0].frame.size() - wire::kHeaderBytes);
  EXPECT_EQ(r.u8(), static_cast<uint8_t>(Op::kValue));
  r.u32();
  EXPECT_EQ(r.bytes(100), toBytes("rank 1"));
  // An oversized notice is malformed: the connection ends, nothing is kept for its close.
  EXPECT_THROW(feed(service, 2, FrameWriter(Op::kSetOnClose, 6).str("big").bytes(Bytes(wire::kMaxOnCloseValueBytes + 1))
                                    .finish()),
               ProtocolError);
}

// One client that floods the store is refused at its share, naming COLL_STORE_MAX_CLIENT_BYTES,
// and the others still have room; its set-on-close notices count against the same share.
TEST(StoreService, OneClientCannotTakeTheOthersRoom) {
  Secret secret{};
  StoreService service(secret, "test", 1000, 400);
  authenticate(service, 1, secret);
  authenticate(service, 2, secret);
  std::string refusal;
  int written = 0;
  for (int i = 0; i < 10; ++i) {
    auto out = feed(service, 1, FrameWriter(Op::kSet, i).str("k" + std::to_string(i)).bytes(Bytes(98, 1)).finish());
    ASSERT_EQ(out.size(), 1u);
    if (opOf(out[0]) == static_cast<uint8_t>(Op::kOk)) {
      ++written;
    } else {
      FrameReader r(out[0].frame.data() + wire::kHeaderBytes, out[0].frame.size() - wire::kHeaderBytes);
      r.u8();
      r.u32();
      refusal = r.str(1000);
    }
  }
  EXPECT_EQ(written, 4);  // 100 bytes each with the key
  EXPECT_NE(refusal.find("share"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("COLL_STORE_MAX_CLIENT_BYTES"), std::string::npos) << refusal;
  auto other = feed(service, 2, FrameWriter(Op::kSet, 1).str("card").bytes(Bytes(390, 2)).finish());
  EXPECT_EQ(opOf(other[0]), static_cast<uint8_t>(Op::kOk));
  auto counter = feed(service, 1, FrameWriter(Op::kAdd, 2).str("n").i64(1).finish());
  EXPECT_EQ(opOf(counter[0]), static_cast<uint8_t>(Op::kError));
  auto notice = feed(service, 1, FrameWriter(Op::kSetOnClose, 3).str("gone").bytes(toBytes("1")).finish());
  EXPECT_EQ(opOf(notice[0]), static_cast<uint8_t>(Op::kError));
  // Client 2 has 6 bytes of share left: its notice fits, and is set at its close.
  auto fits = feed(service, 2, FrameWriter(Op::kSetOnClose, 4).str("left").bytes(toBytes("2")).finish());
  EXPECT_EQ(opOf(fits[0]), static_cast<uint8_t>(Op::kOk));
  std::vector<StoreService::Outgoing> woken;
  service.disconnect(2, &woken);
  authenticate(service, 3, secret);
  auto seen = feed(service, 3, FrameWriter(Op::kGet, 5).u32(0).str("left").finish());
  EXPECT_EQ(opOf(seen[0]), static_cast<uint8_t>(Op::kValue));
}

}  // namespace
}  // namespace bootstrap
}  // namespace coll
