// Which sockets of a pair carry each direction's frames (netSocketsCarrying, net_wire.h): both
// ends must compute the same split, every frame must have a socket, and on one host the two
// directions must not share one when there are two or more.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "transport/net/net_wire.h"

namespace coll {
namespace transport {
namespace {

std::vector<int> allSockets(int count) {
  std::vector<int> all;
  for (int s = 0; s < count; ++s) all.push_back(s);
  return all;
}

TEST(NetLanes, OnOneHostEachDirectionHasSocketsOfItsOwn) {
  EXPECT_EQ(netSocketsCarrying(0, 1, 2, true), std::vector<int>({0}));
  EXPECT_EQ(netSocketsCarrying(1, 0, 2, true), std::vector<int>({1}));
  EXPECT_EQ(netSocketsCarrying(5, 2, 4, true), std::vector<int>({1, 3}));
  EXPECT_EQ(netSocketsCarrying(2, 5, 4, true), std::vector<int>({0, 2}));
  EXPECT_EQ(netSocketsCarrying(3, 7, 3, true), std::vector<int>({0, 2}));
  EXPECT_EQ(netSocketsCarrying(7, 3, 3, true), std::vector<int>({1}));
}

TEST(NetLanes, OneSocketCarriesBothDirections) {
  EXPECT_EQ(netSocketsCarrying(0, 1, 1, true), std::vector<int>({0}));
  EXPECT_EQ(netSocketsCarrying(1, 0, 1, true), std::vector<int>({0}));
  EXPECT_EQ(netSocketsCarrying(0, 1, 1, false), std::vector<int>({0}));
}

TEST(NetLanes, AcrossHostsEverySocketCarriesBothDirections) {
  for (int count = 1; count <= 16; ++count) {
    EXPECT_EQ(netSocketsCarrying(0, 3, count, false), allSockets(count)) << count << " sockets";
    EXPECT_EQ(netSocketsCarrying(3, 0, count, false), allSockets(count)) << count << " sockets";
  }
}

TEST(NetLanes, EverySplitCoversThePairsSocketsOnce) {
  for (int count = 2; count <= 16; ++count) {
    for (int low = 0; low < 4; ++low) {
      for (int high = low + 1; high < 6; ++high) {
        std::vector<int> up = netSocketsCarrying(low, high, count, true);
        std::vector<int> down = netSocketsCarrying(high, low, count, true);
        ASSERT_FALSE(up.empty()) << count;
        ASSERT_FALSE(down.empty()) << count;
        std::vector<int> both = up;
        both.insert(both.end(), down.begin(), down.end());
        std::sort(both.begin(), both.end());
        EXPECT_EQ(both, allSockets(count)) << count << " sockets, ranks " << low << " and " << high;
      }
    }
  }
}

}  // namespace
}  // namespace transport
}  // namespace coll
