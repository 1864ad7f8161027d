#include "common/clock.h"

#include <time.h>

#include <climits>

namespace coll {

Deadline deadlineAfter(std::chrono::milliseconds timeout) {
  auto now = Clock::now();
  if (timeout.count() <= 0) return now;
  // Compare in milliseconds: converting a huge timeout to the clock's nanoseconds would overflow.
  auto headroom = std::chrono::duration_cast<std::chrono::milliseconds>(Deadline::max() - now);
  if (timeout >= headroom) return Deadline::max();
  return now + timeout;
}

int pollTimeoutMs(Deadline deadline) {
  auto now = Clock::now();
  if (deadline <= now) return 0;
  // Round up: poll() returning a millisecond early would make callers spin once more for nothing.
  auto remaining = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return remaining > INT_MAX ? INT_MAX : static_cast<int>(remaining);
}

long long elapsedMs(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(end - start).count();
}

int64_t monotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace coll
