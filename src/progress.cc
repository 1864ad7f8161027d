#include "src/progress.h"

#include <time.h>

#include "src/error.h"

namespace coll {

int64_t monotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

ProgressWaiter::ProgressWaiter(transport::Doorbell* bell, int64_t spinNs, Clock::time_point deadline,
                               const std::function<void()>& healthCheck, const char* what, int timeoutMs)
    : bell_(bell), spinNs_(spinNs), deadline_(deadline), healthCheck_(healthCheck), what_(what), timeoutMs_(timeoutMs) {}

ProgressWaiter::~ProgressWaiter() {
  if (armed_) disarm();
}

void ProgressWaiter::disarm() {
  bell_->sleeping.store(0, std::memory_order_relaxed);
  armed_ = false;
}

void ProgressWaiter::idle() {
  if (!armed_) {
    // Reading the clock costs more than a pause: look at it every 64 rounds only.
    if (spinNs_ > 0 && (++idleRounds_ & 63) != 0) {
      transport::cpuRelax();
      return;
    }
    int64_t now = monotonicNs();
    if (spinStartNs_ == 0) spinStartNs_ = now;
    if (now - spinStartNs_ < spinNs_) {
      transport::cpuRelax();
      return;
    }
    // Arm: the caller makes one more round of progress before we sleep (see doorbell.h).
    snapshot_ = bell_->seq.load(std::memory_order_seq_cst);
    bell_->sleeping.store(1, std::memory_order_seq_cst);
    armed_ = true;
    return;
  }
  int64_t nowNs = monotonicNs();
  // Peers' health costs a syscall per peer: look at most once a millisecond.
  if (nowNs - lastHealthCheckNs_ >= 1000000) {
    lastHealthCheckNs_ = nowNs;
    healthCheck_();
    if (Clock::now() >= deadline_)
      throwError(collTimeout,
                 "%s: timed out after %d ms waiting for peers (COLL_TIMEOUT_MS or collConfig_t.timeoutMs)", what_,
                 timeoutMs_);
  }
  int64_t remainingNs =
      std::chrono::duration_cast<std::chrono::nanoseconds>(deadline_ - Clock::now()).count();
  if (remainingNs < 1) remainingNs = 1;
  // Wake at least every few milliseconds to look at peers' health even if no one rings.
  transport::sleepOnDoorbell(bell_, snapshot_, remainingNs < 5000000 ? remainingNs : 5000000);
  snapshot_ = bell_->seq.load(std::memory_order_seq_cst);
}

}  // namespace coll
