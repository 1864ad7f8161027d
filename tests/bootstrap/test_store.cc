// The Store contract, run against TcpStore (a server and one client per "rank") and MemoryStore.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "bootstrap/memory_store.h"
#include "bootstrap/tcp_store.h"
#include "common/socket.h"
#include "test_helpers.h"

namespace coll {
namespace bootstrap {
namespace {

using testing::expectCollError;
using testing::in;
using testing::msSince;
using testing::toBytes;
using testing::toString;

Secret testSecret(uint8_t seed) {
  Secret s{};
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(seed + i * 13);
  return s;
}

// Hands out stores that share one key space: a fresh TcpStoreClient per call for "tcp", the
// same MemoryStore for "memory".
class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "tcp") {
      server_ = std::make_unique<TcpStoreServer>("127.0.0.1", 0, testSecret(1));
    } else {
      memory_ = std::make_shared<MemoryStore>();
    }
  }
  std::shared_ptr<Store> newClient() {
    if (memory_) return memory_;
    return std::make_shared<TcpStoreClient>("127.0.0.1", server_->port(), testSecret(1), in(5000));
  }

  std::unique_ptr<TcpStoreServer> server_;
  std::shared_ptr<MemoryStore> memory_;
};

TEST_P(StoreTest, SetThenGetFromAnotherClient) {
  auto a = newClient();
  auto b = newClient();
  Bytes binary = {0, 1, 2, 0, 255, 0};
  a->set("bin", binary);
  a->set("empty", Bytes{});
  a->set("text", toBytes("first"));
  a->set("text", toBytes("second"));  // overwrite
  EXPECT_EQ(b->get("bin", in(2000)), binary);
  EXPECT_TRUE(b->get("empty", in(2000)).empty());
  EXPECT_EQ(toString(b->get("text", in(2000))), "second");
}

TEST_P(StoreTest, LargeValueRoundTrip) {
  auto a = newClient();
  auto b = newClient();
  Bytes big(6 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 31 + (i >> 12));
  a->set("big", big);
  EXPECT_EQ(b->get("big", in(5000)), big);
}

TEST_P(StoreTest, GetBlocksUntilAnotherClientSets) {
  auto waiter = newClient();
  auto setter = newClient();
  std::atomic<bool> returned{false};
  Bytes got;
  auto start = Clock::now();
  std::thread t([&] {
    got = waiter->get("late", in(5000));
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_FALSE(returned.load());
  setter->set("late", toBytes("here"));
  t.join();
  EXPECT_EQ(toString(got), "here");
  EXPECT_GE(msSince(start), 140);
  EXPECT_LT(msSince(start), 2000);
}

TEST_P(StoreTest, GetTimesOutInAboutTheRequestedTime) {
  auto store = newClient();
  auto start = Clock::now();
  std::string message = expectCollError(collTimeout, [&] { store->get("never/set", in(300)); });
  long long elapsed = msSince(start);
  EXPECT_GE(elapsed, 290);
  EXPECT_LT(elapsed, 1200);
  EXPECT_NE(message.find("waiting for key 'never/set'"), std::string::npos) << message;
  if (server_) {
    EXPECT_NE(message.find("from the rendezvous store at 127.0.0.1:" + std::to_string(server_->port())),
              std::string::npos)
        << message;
  }
  // The connection stays usable after a timeout.
  store->set("after", toBytes("ok"));
  EXPECT_EQ(toString(store->get("after", in(1000))), "ok");
}

TEST_P(StoreTest, GetWithPassedDeadlineStillReturnsAPresentKey) {
  auto store = newClient();
  store->set("present", toBytes("v"));
  EXPECT_EQ(toString(store->get("present", Clock::now())), "v");
}

TEST_P(StoreTest, AddIsAtomicAcrossThreads) {
  constexpr int kThreads = 8, kAdds = 50;
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto store = newClient();
      for (int i = 0; i < kAdds; ++i) seen[t].push_back(store->add("counter", 1));
    });
  }
  for (auto& t : threads) t.join();
  std::vector<int64_t> all;
  for (auto& s : seen) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  // Every increment returned a distinct value: 1..400 exactly once each.
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kAdds));
  for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], static_cast<int64_t>(i + 1));
  auto store = newClient();
  EXPECT_EQ(store->add("counter", -400), 0);
  EXPECT_EQ(store->add("fresh", -5), -5);
  EXPECT_EQ(toString(store->get("fresh", in(1000))), "-5");
}

TEST_P(StoreTest, AddOnANonCounterIsRejectedAndLeavesTheValue) {
  auto store = newClient();
  store->set("text", toBytes("abc"));
  std::string message = expectCollError(collInvalidUsage, [&] { store->add("text", 1); });
  EXPECT_NE(message.find("'text'"), std::string::npos) << message;
  EXPECT_EQ(toString(store->get("text", in(1000))), "abc");
  store->set("max", toBytes(std::to_string(INT64_MAX)));
  expectCollError(collInvalidUsage, [&] { store->add("max", 1); });
}

TEST_P(StoreTest, CheckAndWait) {
  auto a = newClient();
  auto b = newClient();
  EXPECT_FALSE(a->check({"x"}));
  a->set("x", toBytes("1"));
  EXPECT_TRUE(b->check({"x"}));
  EXPECT_FALSE(b->check({"x", "y"}));
  EXPECT_TRUE(b->check({}));

  std::atomic<bool> done{false};
  std::thread t([&] {
    b->wait({"x", "y", "y"}, in(5000));
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(done.load());
  a->add("y", 3);
  t.join();
  EXPECT_TRUE(done.load());
  EXPECT_TRUE(a->check({"x", "y"}));

  auto start = Clock::now();
  std::string message = expectCollError(collTimeout, [&] { a->wait({"x", "z"}, in(200)); });
  EXPECT_GE(msSince(start), 190);
  EXPECT_NE(message.find("'z'"), std::string::npos) << message;
}

TEST_P(StoreTest, ManyConcurrentWaitersAreAllWoken) {
  constexpr int kWaiters = 16;
  std::vector<std::thread> threads;
  std::atomic<int> woken{0};
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&] {
      auto store = newClient();
      if (toString(store->get("go", in(5000))) == "now") ++woken;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  newClient()->set("go", toBytes("now"));
  for (auto& t : threads) t.join();
  EXPECT_EQ(woken.load(), kWaiters);
}

TEST_P(StoreTest, OneClientSharedByThreadsDoesNotSerializeBlockedGets) {
  // A get blocked on a shared client must not stop another thread's set on the same client:
  // that set is what the get waits for.
  auto shared = newClient();
  Bytes got;
  std::thread getter([&] { got = shared->get("k", in(5000)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto start = Clock::now();
  shared->set("k", toBytes("v"));
  EXPECT_LT(msSince(start), 1000);
  getter.join();
  EXPECT_EQ(toString(got), "v");

  std::vector<std::thread> threads;
  std::atomic<int> correct{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::string key = "peer" + std::to_string((t + 1) % 8);
      shared->set("peer" + std::to_string(t), toBytes(std::to_string(t)));
      if (toString(shared->get(key, in(5000))) == std::to_string((t + 1) % 8)) ++correct;
      shared->add("sum", t);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(correct.load(), 8);
  EXPECT_EQ(shared->add("sum", 0), 28);
}

TEST_P(StoreTest, PrefixStoresAreIsolated) {
  auto base = newClient();
  PrefixStore a("comm-a", base);
  PrefixStore b("comm-b", newClient());
  a.set("k", toBytes("from-a"));
  EXPECT_TRUE(a.check({"k"}));
  EXPECT_FALSE(b.check({"k"}));
  expectCollError(collTimeout, [&] { b.get("k", in(100)); });
  b.set("k", toBytes("from-b"));
  EXPECT_EQ(toString(a.get("k", in(1000))), "from-a");
  EXPECT_EQ(toString(b.get("k", in(1000))), "from-b");
  EXPECT_EQ(toString(base->get("comm-a/k", in(1000))), "from-a");
  EXPECT_EQ(a.add("n", 2), 2);
  EXPECT_EQ(b.add("n", 5), 5);
  EXPECT_EQ(a.add("n", 0), 2);
  PrefixStore nested("inner", std::make_shared<PrefixStore>(a));
  nested.set("x", toBytes("deep"));
  EXPECT_EQ(toString(base->get("comm-a/inner/x", in(1000))), "deep");
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreTest, ::testing::Values("tcp", "memory"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(TcpStore, ServerShutdownEndsBlockedGetWithRemoteError) {
  auto server = std::make_unique<TcpStoreServer>("127.0.0.1", 0, testSecret(2));
  TcpStoreClient client("127.0.0.1", server->port(), testSecret(2), in(5000));
  std::string message;
  auto start = Clock::now();
  std::thread t([&] { message = expectCollError(collRemoteError, [&] { client.get("k", in(10000)); }); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.reset();
  t.join();
  EXPECT_LT(msSince(start), 3000);  // at EOF, not at the 10 s deadline
  EXPECT_NE(message.find("closed the connection"), std::string::npos) << message;
  // Later calls fail the same way at once.
  expectCollError(collRemoteError, [&] { client.set("k", Bytes{}); });
}

// A store that closes the connection during the handshake without a word (as one making room
// under a flood does) is dialled again until the client's deadline; a store that refuses the
// client (a wrong secret: it says so) is not.
TEST(TcpStore, ClientConnectsAgainWhenTheStoreClosesItMidHandshake) {
  Fd listener = listenOn("127.0.0.1", 0);
  const uint16_t port = localAddressOf(listener.get()).port();
  std::atomic<int> accepted{0};
  std::atomic<bool> stop{false};
  // Reads each client's hello, then closes without a reply.
  std::thread fake([&] {
    while (!stop.load()) {
      pollfd p{listener.get(), POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      Fd conn(accept(listener.get(), nullptr, nullptr));
      if (!conn.valid()) continue;
      ++accepted;
      uint8_t hello[64];
      (void)recv(conn.get(), hello, sizeof(hello), 0);
    }
  });
  const auto start = Clock::now();
  const std::string message =
      expectCollError(collRemoteError, [&] { TcpStoreClient client("127.0.0.1", port, testSecret(4), in(600)); });
  const long long waited = msSince(start);
  stop.store(true);
  fake.join();
  EXPECT_GE(accepted.load(), 2) << "the client did not connect again";
  EXPECT_GE(waited, 500) << "the client gave up before its deadline";
  EXPECT_NE(message.find("closed the connection"), std::string::npos) << message;

  // A wrong secret is refused in words: one connection, an error at once.
  TcpStoreServer server("127.0.0.1", 0, testSecret(5));
  const auto refusedAt = Clock::now();
  const std::string refused = expectCollError(
      collInvalidUsage, [&] { TcpStoreClient client("127.0.0.1", server.port(), testSecret(6), in(5000)); });
  EXPECT_LT(msSince(refusedAt), 2000) << refused;
  EXPECT_NE(refused.find("wrong secret"), std::string::npos) << refused;
}

TEST(TcpStore, ClientValidatesSizesBeforeSending) {
  TcpStoreServer server("127.0.0.1", 0, testSecret(3));
  TcpStoreClient client("127.0.0.1", server.port(), testSecret(3), in(5000));
  expectCollError(collInvalidArgument, [&] { client.set(std::string(kMaxKeyBytes + 1, 'k'), Bytes{}); });
  client.set(std::string(kMaxKeyBytes, 'k'), toBytes("v"));
  EXPECT_EQ(toString(client.get(std::string(kMaxKeyBytes, 'k'), in(1000))), "v");
}

}  // namespace
}  // namespace bootstrap
}  // namespace coll
