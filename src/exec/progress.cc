#include "src/exec/progress.h"

#include <sched.h>

#include "common/error.h"

namespace coll {
namespace {

constexpr int64_t kYieldNs = 2000000;

}  // namespace

void ProgressWaiter::tellDriversNow(transport::ProgressDriver::Executor state) {
  for (transport::ProgressDriver* driver : drivers_) driver->executorState(state);
}

void ProgressWaiter::disarm() {
  bell_->sleeping.store(0, std::memory_order_relaxed);
  armed_ = false;
}

void ProgressWaiter::progressed() {
  if (armed_) disarm();
  idleStartNs_ = 0;
  spinning_ = spinNs_ > 0;
}

void ProgressWaiter::idle() {
  if (armed_) {
    sleepUntilRung();
    return;
  }
  for (transport::ProgressDriver* driver : drivers_) driver->progressOnce();
  // While spinning the clock is read every 64 rounds only: a pause is cheaper.
  if (spinning_ && (++idleRounds_ & 63) != 0) {
    transport::cpuRelax();
    return;
  }
  int64_t now = monotonicNs();
  if (deadlineNs_ == 0) deadlineNs_ = now + static_cast<int64_t>(timeoutMs_) * 1000000;
  if (idleStartNs_ == 0) idleStartNs_ = now;
  int64_t idleNs = now - idleStartNs_;
  spinning_ = idleNs < spinNs_;
  if (spinning_) {
    transport::cpuRelax();
    return;
  }
  // Then yield: when ranks outnumber cores the rank we wait for is often runnable on this very
  // core, and sched_yield hands it the core at once, where a futex sleep would add a wake-up
  // through the scheduler (tens of microseconds). After kYieldNs of nothing, sleep for real.
  if (idleNs < spinNs_ + kYieldNs) {
    sched_yield();
    return;
  }
  // Arm: the caller makes one more round of progress before we sleep (see doorbell.h).
  snapshot_ = bell_->seq.load(std::memory_order_seq_cst);
  bell_->sleeping.store(1, std::memory_order_seq_cst);
  transport::fenceAgainstRingers();  // peers may ring without a fence (doorbell.h)
  armed_ = true;
}

void ProgressWaiter::sleepUntilRung() {
  int64_t nowNs = monotonicNs();
  // Peers' health costs a syscall per peer: look at most once a millisecond.
  if (nowNs - lastHealthCheckNs_ >= 1000000) {
    lastHealthCheckNs_ = nowNs;
    // Peers read it when they time out: this rank is here, waiting, not stopped.
    bell_->activity.waitingAtNs.store(nowNs, std::memory_order_relaxed);
    healthCheck_();
    if (nowNs >= deadlineNs_) throwTimeout();
  }
  int64_t remainingNs = deadlineNs_ - monotonicNs();
  if (remainingNs < 1) remainingNs = 1;
  // Wake at least every few milliseconds to look at peers' health even if no one rings.
  tellDrivers(transport::ProgressDriver::Executor::kAsleep);
  transport::sleepOnDoorbell(bell_, snapshot_, remainingNs < 5000000 ? remainingNs : 5000000);
  tellDrivers(transport::ProgressDriver::Executor::kDriving);
  snapshot_ = bell_->seq.load(std::memory_order_seq_cst);
}

void ProgressWaiter::throwTimeout() const {
  const std::string blame = describeStall_ ? describeStall_() : std::string();
  throwError(collTimeout, "%s: timed out after %d ms waiting for peers%s%s (COLL_TIMEOUT_MS or collConfig_t.timeoutMs)",
             what_, timeoutMs_, blame.empty() ? "" : ": ", blame.c_str());
}

}  // namespace coll
