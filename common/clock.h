// Time as every layer measures it: one monotonic clock, deadlines on it, and the conversions the
// waits need (poll() takes milliseconds; spinning loops read nanoseconds). Every blocking call in
// the library takes a Deadline, because a wait without one is the hang the design forbids.
#pragma once

#include <chrono>
#include <cstdint>

namespace coll {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// now + timeout, saturating instead of overflowing for huge timeouts.
Deadline deadlineAfter(std::chrono::milliseconds timeout);
// Milliseconds from now until the deadline, rounded up and clamped to [0, INT32_MAX] so it can
// feed poll().
int pollTimeoutMs(Deadline deadline);
// Milliseconds between two instants, for error messages.
long long elapsedMs(Clock::time_point start, Clock::time_point end);
// CLOCK_MONOTONIC in nanoseconds: cheaper than Clock::now() in spinning loops.
int64_t monotonicNs();

}  // namespace coll
