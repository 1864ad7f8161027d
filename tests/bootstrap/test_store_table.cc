#include "bootstrap/store_table.h"

#include <gtest/gtest.h>

#include "bootstrap/store_counter.h"
#include "test_helpers.h"

namespace coll {
namespace bootstrap {
namespace {

using testing::toBytes;

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
  ASSERT_TRUE(table.add("n", 5, &result, &ready));
  EXPECT_EQ(result, 5);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0], w);
  EXPECT_EQ(*table.find("n"), toBytes("5"));
  table.set("s", toBytes("five"), &ready);
  EXPECT_FALSE(table.add("s", 1, &result, &ready));
  EXPECT_EQ(*table.find("s"), toBytes("five"));
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

}  // namespace
}  // namespace bootstrap
}  // namespace coll
