#include "src/plan/tuner.h"

#include <algorithm>
#include <exception>

#include "common/clock.h"
#include "common/error.h"

namespace coll {

void PlanTuner::Estimate::add(double secondsPerByte) {
  samples[next] = secondsPerByte;
  next = (next + 1) % kWindow;
  count = std::min(count + 1, kWindow);
}

double PlanTuner::Estimate::median() const {
  if (count == 0) return 0;
  double sorted[kWindow];
  for (int i = 0; i < count; ++i) {  // insertion sort: at most kWindow (std::sort trips g++ 12's -Warray-bounds)
    int j = i;
    for (; j > 0 && sorted[j - 1] > samples[i]; --j) sorted[j] = sorted[j - 1];
    sorted[j] = samples[i];
  }
  return count % 2 == 1 ? sorted[count / 2] : 0.5 * (sorted[count / 2 - 1] + sorted[count / 2]);
}

int PlanTuner::sizeClassOf(size_t bytes) {
  int cls = 0;
  while (bytes > 1 && cls < kSizeClasses - 1) bytes >>= 1, ++cls;
  return cls;
}

Algo PlanTuner::startRun(SizeClass& c, int index, uint32_t* leaseCalls) {
  // A run measures the plan afresh: what it took long ago (another phase of the machine) goes.
  c.estimates[index] = Estimate();
  c.untimedLeft = c.triedBefore[index] ? 0 : kFirstRunUntimedCalls;  // later runs: the switch rule alone
  c.triedBefore[index] = true;
  return hold(c, index, kRunCalls, leaseCalls);
}

Algo PlanTuner::hold(SizeClass& c, int index, uint32_t calls, uint32_t* leaseCalls) {
  c.heldIndex = index;
  c.heldLeft = calls - 1;
  if (leaseCalls != nullptr) *leaseCalls = calls;
  return c.algos[index];
}

Algo PlanTuner::choose(size_t bytes, Algo usual, Algo alternative, uint32_t* leaseCalls) {
  SizeClass& c = classes_[sizeClassOf(bytes)];
  c.algos[0] = usual;
  c.algos[1] = alternative;
  if (leaseCalls != nullptr) *leaseCalls = 0;
  if (c.heldLeft > 0) {
    --c.heldLeft;
    return c.algos[c.heldIndex];
  }
  // Measure each at least once, then prefer the faster but retry the slower now and then, so that
  // a change of the machine is noticed: every kExploreEvery runs' worth of calls times how much
  // slower it is, so the retries cost at most 1/kExploreEvery of the time whatever the gap. (A
  // fixed 1 in 16 cost a large share where one plan was several times slower: docs/performance.md,
  // "Choices in the code, and the measurement behind each".)
  double estimate[2];
  for (int i = 0; i < 2; ++i) {
    estimate[i] = c.estimates[i].median();
    if (estimate[i] == 0) return startRun(c, i, leaseCalls);
  }
  const int best = estimate[0] <= estimate[1] ? 0 : 1;
  if (best != c.taken) {
    c.retryLeftSoon = c.taken >= 0;
    c.taken = best;
    c.sinceRetry = 0;
  }
  const double slowdown = c.retryLeftSoon ? 1.0 : estimate[1 - best] / estimate[best];
  const double every = kExploreEvery * kRunCalls * std::min(slowdown, kMaxSlowdown);
  if (++c.sinceRetry >= every) {
    c.sinceRetry = 0;
    c.retryLeftSoon = false;
    return startRun(c, 1 - best, leaseCalls);
  }
  if (leaseCalls == nullptr) return c.algos[best];
  // A lease commits the calls up to the next retry, at most kLeaseCalls of them: the estimates
  // they bring are weighed when it ends.
  const double untilRetry = every - static_cast<double>(c.sinceRetry);
  const uint32_t calls = static_cast<uint32_t>(std::max(1.0, std::min<double>(kLeaseCalls, untilRetry)));
  c.sinceRetry += calls - 1;
  return hold(c, best, calls, leaseCalls);
}

void PlanTuner::record(size_t bytes, Algo algo, double seconds) {
  if (bytes == 0) return;
  SizeClass& c = classes_[sizeClassOf(bytes)];
  for (int i = 0; i < 2; ++i) {
    if (c.algos[i] != algo) continue;
    // The first call after a switch of plan (or the very first) times the switch, and the first
    // calls of a plan's first run its first touches of memory: not recorded.
    const bool afterSwitch = c.lastReported != i;
    c.lastReported = i;
    const bool untimed = c.untimedLeft > 0;
    if (untimed) --c.untimedLeft;
    if (afterSwitch || untimed) return;
    c.estimates[i].add(seconds / static_cast<double>(bytes));
    return;
  }
}

void LeasedCall::report() {
  if (std::uncaught_exceptions() > timing_->uncaughtAtStart) return;
  timing_->tuner->record(timing_->bytes, timing_->algo, (monotonicNs() - timing_->startNs) * 1e-9);
}

LeasedCall SharedChoices::choose(const CollCall& call, Algo usual, Algo alternative, NativeRunner& agreement,
                                 PeerWaiter& waiter) {
  const size_t bytes = call.count * call.elemSize;
  PlanTuner& tuner = tuners_[static_cast<int>(call.type)];
  Lease& lease = leases_[static_cast<int>(call.type)][PlanTuner::sizeClassOf(bytes)];
  uint32_t announced[2] = {0, 0};  // the choice, and the calls it holds for
  if (rank_ == 0) announced[0] = tuner.choose(bytes, usual, alternative, &announced[1]) == usual ? 0 : 1;
  if (lease.callsLeft == 0) {
    CollCall agree;
    agree.type = CollType::kBroadcast;
    agree.sendbuff = announced;
    agree.recvbuff = announced;
    agree.count = sizeof(announced);
    agree.datatype = collUint8;
    agree.root = 0;
    agreement.run(agree, waiter);
    if (announced[0] > 1 || announced[1] == 0 || announced[1] > PlanTuner::kLeaseCalls)
      throwError(collRemoteError, "rank 0 sent plan choice %u for %u calls, expected 0 or 1 for 1 to %u", announced[0],
                 announced[1], PlanTuner::kLeaseCalls);
    lease.choice = static_cast<uint8_t>(announced[0]);
    lease.callsLeft = announced[1];
  } else if (rank_ == 0 && announced[1] != 0) {
    throwError(collInternalError, "the plan tuner began a lease while %u calls of the last were left", lease.callsLeft);
  }
  --lease.callsLeft;
  LeasedCall leased;
  leased.algo_ = lease.choice == 0 ? usual : alternative;
  if (rank_ == 0) {
    timing_.tuner = &tuner;
    timing_.bytes = bytes;
    timing_.algo = leased.algo_;
    timing_.uncaughtAtStart = std::uncaught_exceptions();
    timing_.startNs = monotonicNs();
    leased.timing_ = &timing_;
  }
  return leased;
}

}  // namespace coll
