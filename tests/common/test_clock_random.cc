// Deadlines saturate instead of overflowing, poll() timeouts round up and clamp, and random
// bytes are random.
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cstring>

#include "common/clock.h"
#include "common/random.h"

namespace coll {
namespace {

TEST(Clock, DeadlinesSaturate) {
  EXPECT_EQ(deadlineAfter(std::chrono::milliseconds::max()), Deadline::max());
  Deadline soon = deadlineAfter(std::chrono::milliseconds(50));
  EXPECT_GT(soon, Clock::now());
  EXPECT_LE(soon, Clock::now() + std::chrono::milliseconds(50));
  // A timeout of zero or less is "now".
  Deadline before = Clock::now();
  Deadline past = deadlineAfter(std::chrono::milliseconds(-5));
  Deadline after = Clock::now();
  EXPECT_GE(past, before);
  EXPECT_LE(past, after);
}

TEST(Clock, PollTimeoutsRoundUpAndClamp) {
  EXPECT_EQ(pollTimeoutMs(Clock::now() - std::chrono::seconds(1)), 0);
  EXPECT_EQ(pollTimeoutMs(Deadline::max()), INT_MAX);
  int ms = pollTimeoutMs(Clock::now() + std::chrono::microseconds(1500));
  EXPECT_GE(ms, 1);
  EXPECT_LE(ms, 2);
}

TEST(Clock, MonotonicNanosecondsAdvance) {
  int64_t a = monotonicNs();
  int64_t b = monotonicNs();
  EXPECT_GE(b, a);
  EXPECT_GT(a, 0);
}

TEST(Random, FillsEveryByteDifferentlyEachTime) {
  unsigned char a[64], b[64];
  memset(a, 0, sizeof(a));
  memset(b, 0, sizeof(b));
  fillRandom(a, sizeof(a), "a test");
  fillRandom(b, sizeof(b), "a test");
  EXPECT_NE(memcmp(a, b, sizeof(a)), 0);
  int zeros = 0;
  for (unsigned char x : a) zeros += x == 0 ? 1 : 0;
  EXPECT_LT(zeros, 8);  // 64 random bytes: about one zero
}

}  // namespace
}  // namespace coll
