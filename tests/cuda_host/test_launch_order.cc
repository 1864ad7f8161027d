// The ordering of one communicator's device launches across streams (src/exec/launch_order.h):
// which launches must wait for the previous one's event, and which waits and records become
// graph nodes. The rule is what keeps two launches of one communicator from sharing channel
// slots at once, so each case below is a launch sequence a user can make.
#include <gtest/gtest.h>

#include "src/exec/launch_order.h"

namespace {

const void* const kStreamA = reinterpret_cast<const void*>(0x1000);
const void* const kStreamB = reinterpret_cast<const void*>(0x2000);

// Enqueues one launch the way the device engine does: ask, then record.
coll::LaunchOrder::Before launch(coll::LaunchOrder& order, const void* stream, bool capturing = false) {
  coll::LaunchOrder::Before b = order.before(stream, capturing);
  order.recorded(stream, capturing);
  return b;
}

TEST(LaunchOrder, TheFirstEagerLaunchWaitsForNothing) {
  coll::LaunchOrder order;
  EXPECT_FALSE(order.anyLaunch());
  const auto b = launch(order, kStreamA);
  EXPECT_FALSE(b.wait);
  EXPECT_FALSE(b.external);
  EXPECT_TRUE(order.anyLaunch());
}

TEST(LaunchOrder, OneStreamOrdersItsOwnLaunches) {
  coll::LaunchOrder order;
  launch(order, kStreamA);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(launch(order, kStreamA).wait) << "launch " << i;
  EXPECT_EQ(order.launches(), 4u);
}

TEST(LaunchOrder, AnotherStreamWaitsForThePreviousLaunch) {
  coll::LaunchOrder order;
  launch(order, kStreamA);
  EXPECT_TRUE(launch(order, kStreamB).wait);
  // And back: A's stream order does not cover B's launch.
  EXPECT_TRUE(launch(order, kStreamA).wait);
  EXPECT_FALSE(launch(order, kStreamA).wait);
}

TEST(LaunchOrder, ACaptureAlwaysWaitsAsAGraphNode) {
  coll::LaunchOrder order;
  // Even first: the graph may be replayed after later eager launches.
  auto b = launch(order, kStreamA, /*capturing=*/true);
  EXPECT_TRUE(b.wait);
  EXPECT_TRUE(b.external);
  b = launch(order, kStreamA, /*capturing=*/true);
  EXPECT_TRUE(b.wait);
  EXPECT_TRUE(b.external);
}

TEST(LaunchOrder, AnEagerLaunchAfterACaptureWaitsOnItsOwnStreamToo) {
  coll::LaunchOrder order;
  launch(order, kStreamA);
  launch(order, kStreamA, /*capturing=*/true);
  // The replay runs whenever the graph is launched: stream A's order says nothing about it.
  const auto b = launch(order, kStreamA);
  EXPECT_TRUE(b.wait);
  EXPECT_FALSE(b.external);
  // And so does every later eager launch: the graph may be replayed again, on any stream, between
  // two eager launches of one stream, and the library does not see cudaGraphLaunch.
  EXPECT_TRUE(launch(order, kStreamA).wait);
  EXPECT_TRUE(launch(order, kStreamB).wait);
  EXPECT_TRUE(launch(order, kStreamB).wait);
}

}  // namespace
