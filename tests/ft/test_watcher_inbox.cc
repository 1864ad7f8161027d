// The watcher's inbox without a job: a verdict reaches the other rank's watcher, and the rank
// that holds the store's server waits before it goes until the others have read what was sent
// to them, or closed their inbox, or a short bound has passed (a rank that never reads).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "bootstrap/memory_store.h"
#include "src/trace/comm_watcher.h"

namespace {

using coll::bootstrap::MemoryStore;
using coll::trace::CommWatcher;
using coll::trace::WatcherHooks;
using Clock = std::chrono::steady_clock;

WatcherHooks quietHooks() {
  WatcherHooks hooks;
  hooks.report = [](const char*, size_t) { return std::string(); };
  hooks.dump = [](const char*) {};
  hooks.revoked = [](int) {};
  hooks.excluded = [](int) {};
  hooks.silenceOf = [](int) { return std::string(); };
  return hooks;
}

double secondsToAwait(CommWatcher& watcher) {
  const auto start = Clock::now();
  watcher.awaitInboxesRead();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool heardVerdict(const CommWatcher& watcher, const std::string& line) {
  const auto start = Clock::now();
  std::string heard;
  int silent = -1;
  while (Clock::now() - start < std::chrono::seconds(5)) {
    if (watcher.peerVerdict(&heard, &silent)) return heard == line && silent == 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST(WatcherInbox, NoNoticesNoWait) {
  auto store = std::make_shared<MemoryStore>();
  CommWatcher host(store, 0, 2, "comm test rank 0/2", quietHooks());
  CommWatcher other(store, 1, 2, "comm test rank 1/2", quietHooks());
  EXPECT_LT(secondsToAwait(host), 0.5);
}

TEST(WatcherInbox, TheHostWaitsUntilTheVerdictIsRead) {
  auto store = std::make_shared<MemoryStore>();
  CommWatcher host(store, 0, 2, "comm test rank 0/2", quietHooks());
  CommWatcher other(store, 1, 2, "comm test rank 1/2", quietHooks());
  host.tellVerdict("rank 1 last completed #2 and is in no call", 0);
  EXPECT_LT(secondsToAwait(host), 1.5);
  EXPECT_TRUE(store->check({"watch/1/read/1"}));
  EXPECT_TRUE(heardVerdict(other, "rank 1 last completed #2 and is in no call"));
}

TEST(WatcherInbox, AClosedInboxIsNotWaitedFor) {
  auto store = std::make_shared<MemoryStore>();
  CommWatcher host(store, 0, 2, "comm test rank 0/2", quietHooks());
  { CommWatcher gone(store, 1, 2, "comm test rank 1/2", quietHooks()); }
  EXPECT_TRUE(store->check({"watch/1/closed"}));
  host.tellVerdict("a verdict after rank 1 left", 0);
  EXPECT_LT(secondsToAwait(host), 0.5);
}

TEST(WatcherInbox, ARankThatNeverReadsHoldsTheHostBoundedly) {
  auto store = std::make_shared<MemoryStore>();
  CommWatcher host(store, 0, 2, "comm test rank 0/2", quietHooks());  // rank 1 has no watcher
  host.tellVerdict("nobody reads this", 0);
  const double waited = secondsToAwait(host);
  EXPECT_GT(waited, 1.0);
  EXPECT_LT(waited, 4.0);
}

TEST(WatcherInbox, ARankKnownGoneIsNotWaitedFor) {
  auto store = std::make_shared<MemoryStore>();
  WatcherHooks hooks = quietHooks();
  hooks.silenceOf = [](int rank) { return rank == 1 ? std::string("its process has exited") : std::string(); };
  CommWatcher host(store, 0, 2, "comm test rank 0/2", hooks);
  host.tellVerdict("rank 1 is gone", 0);
  EXPECT_LT(secondsToAwait(host), 0.5);
}

}  // namespace
