#include <gtest/gtest.h>

#include <atomic>
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

INSTANTIATE_TEST_SUITE_P(Stores, BootstrapOpsTest, ::testing::Values("tcp", "memory"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace bootstrap
}  // namespace coll
