#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "bootstrap/bootstrap_ops.h"
#include "bootstrap/memory_store.h"
#include "bootstrap/tcp_store.h"
#include "test_helpers.h"

namespace coll {
namespace bootstrap {
namespace {

using testing::expectCollError;
using testing::in;
using testing::toBytes;

constexpr int kRanks = 8;

class BootstrapOpsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "tcp") {
      server_ = std::make_unique<TcpStoreServer>("127.0.0.1", 0, Secret{});
    } else {
      memory_ = std::make_shared<MemoryStore>();
    }
  }
  std::shared_ptr<Store> storeForRank() {
    if (memory_) return memory_;
    return std::make_shared<TcpStoreClient>("127.0.0.1", server_->port(), Secret{}, in(5000));
  }
  // Runs fn(rank, store) on kRanks threads, each with its own store connection.
  void runRanks(int nranks, const std::function<void(int, Store&)>& fn) {
    std::vector<std::thread> threads;
    for (int r = 0; r < nranks; ++r) {
      threads.emplace_back([this, r, &fn] {
        auto store = storeForRank();
        fn(r, *store);
      });
    }
    for (auto& t : threads) t.join();
  }

  std::unique_ptr<TcpStoreServer> server_;
  std::shared_ptr<MemoryStore> memory_;
};

Bytes contribution(int rank, int round) {
  // Different sizes per rank (including empty) catch mixed-up indices and lengths.
  Bytes b(static_cast<size_t>(rank * 37), static_cast<uint8_t>(rank + 16 * round));
  if (!b.empty()) b[0] = static_cast<uint8_t>(rank);
  return b;
}

TEST_P(BootstrapOpsTest, AllGatherReturnsEveryRanksBlobInRankOrder) {
  std::vector<std::vector<Bytes>> results(kRanks);
  std::vector<std::vector<Bytes>> second(kRanks);
  runRanks(kRanks, [&](int rank, Store& store) {
    results[rank] = allGather(store, "init/0", rank, kRanks, contribution(rank, 0), in(5000));
    second[rank] = allGather(store, "init/1", rank, kRanks, contribution(rank, 1), in(5000));
  });
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(results[r].size(), static_cast<size_t>(kRanks));
    for (int peer = 0; peer < kRanks; ++peer) {
      EXPECT_EQ(results[r][peer], contribution(peer, 0)) << "rank " << r << " peer " << peer;
      EXPECT_EQ(second[r][peer], contribution(peer, 1)) << "rank " << r << " peer " << peer;
    }
  }
}

TEST_P(BootstrapOpsTest, BarrierReleasesNobodyBeforeEveryoneArrived) {
  std::atomic<int> arrived{0};
  std::atomic<int> early{0};
  runRanks(kRanks, [&](int rank, Store& store) {
    for (int round = 0; round < 3; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(((rank * 7 + round * 3) % kRanks) * 5));
      ++arrived;
      barrier(store, "b/" + std::to_string(round), rank, kRanks, in(5000));
      if (arrived.load() < (round + 1) * kRanks) ++early;
    }
  });
  EXPECT_EQ(arrived.load(), 3 * kRanks);
  EXPECT_EQ(early.load(), 0);
}

TEST_P(BootstrapOpsTest, BarrierWithAMissingRankTimesOut) {
  std::atomic<int> timeouts{0};
  runRanks(kRanks - 1, [&](int rank, Store& store) {
    try {
      barrier(store, "partial", rank, kRanks, in(300));
    } catch (const CollError& e) {
      if (e.code() == collTimeout) ++timeouts;
    }
  });
  EXPECT_EQ(timeouts.load(), kRanks - 1);
}

TEST_P(BootstrapOpsTest, RankOutsideTheGroupIsRejected) {
  auto store = storeForRank();
  expectCollError(collInvalidArgument, [&] { allGather(*store, "t", 8, 8, Bytes{}, in(100)); });
  expectCollError(collInvalidArgument, [&] { barrier(*store, "t", -1, 8, in(100)); });
  expectCollError(collInvalidArgument, [&] { barrier(*store, "t", 0, 0, in(100)); });
}

// A rank whose connection closes after it announced itself ends the others' waits within about a
// second, naming it; a rank that finished the step before it left is not taken for a failure.
TEST(BootstrapDeparture, ALostConnectionEndsTheOthersWaitsNamingTheRank) {
  TcpStoreServer server("127.0.0.1", 0, Secret{});
  auto connect = [&] { return std::make_shared<TcpStoreClient>("127.0.0.1", server.port(), Secret{}, in(5000)); };
  auto leaver = connect();
  announceDepartureOnClose(*leaver, "rank 2 (pid 4242 on elsewhere)", 2);
  auto waiter = connect();
  announceDepartureOnClose(*waiter, "rank 0 (pid 1 on here)", 0);
  std::thread leave([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    leaver.reset();  // the connection closes, as when the process dies
  });
  const auto start = Clock::now();
  // Rank 1 never comes, so without the departure this would wait the whole 30 s.
  std::string message =
      expectCollError(collRemoteError, [&] { allGather(*waiter, "init", 0, 3, toBytes("x"), in(30000)); });
  leave.join();
  EXPECT_LT(testing::msSince(start), 3000);
  EXPECT_NE(message.find("allGather('init'): rank 2 (pid 4242 on elsewhere) lost its connection"), std::string::npos)
      << message;
  message = expectCollError(collRemoteError, [&] { barrier(*waiter, "b", 0, 3, in(30000)); });
  EXPECT_NE(message.find("barrier('b'): rank 2"), std::string::npos) << message;
  // Asked about some ranks only: rank 2's departure counts where rank 2 is awaited, not elsewhere.
  throwIfAnyOfDeparted(*waiter, {1}, "dialling", in(5000));
  message = expectCollError(collRemoteError, [&] { throwIfAnyOfDeparted(*waiter, {1, 2}, "dialling", in(5000)); });
  EXPECT_NE(message.find("dialling: rank 2 (pid 4242 on elsewhere) lost its connection"), std::string::npos) << message;
}

TEST(BootstrapDeparture, ARankThatFinishedAndLeftIsNotAFailure) {
  TcpStoreServer server("127.0.0.1", 0, Secret{});
  auto connect = [&] { return std::make_shared<TcpStoreClient>("127.0.0.1", server.port(), Secret{}, in(5000)); };
  auto early = connect();
  auto late = connect();
  announceDepartureOnClose(*early, "rank 0", 0);
  announceDepartureOnClose(*late, "rank 1", 1);
  std::thread first([&] {
    allGather(*early, "g", 0, 2, toBytes("a"), in(5000));
    barrier(*early, "b", 0, 2, in(5000));
    early.reset();  // done, and gone before rank 1 looks
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::vector<Bytes> all = allGather(*late, "g", 1, 2, toBytes("b"), in(5000));
  barrier(*late, "b", 1, 2, in(5000));  // released by rank 0's arrival before it left
  first.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(all[0], toBytes("a"));
  EXPECT_EQ(all[1], toBytes("b"));
  // The finished steps are still answered after the departure: their keys are there.
  EXPECT_EQ(allGather(*late, "g", 1, 2, toBytes("b"), in(5000))[0], toBytes("a"));
}

INSTANTIATE_TEST_SUITE_P(Stores, BootstrapOpsTest, ::testing::Values("tcp", "memory"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace bootstrap
}  // namespace coll
