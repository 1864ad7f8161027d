#include "src/plan/tuner.h"

#include <algorithm>

namespace coll {
namespace {

// Weight of the newest measurement: a few calls after the machine changes, the estimate follows.
constexpr double kNewWeight = 0.3;

}  // namespace

int PlanTuner::sizeClassOf(size_t bytes) {
  int cls = 0;
  while (bytes > 1 && cls < kSizeClasses - 1) bytes >>= 1, ++cls;
  return cls;
}

Algo PlanTuner::startRun(SizeClass& c, int index) {
  c.runOf = index;
  c.runLeft = kRunCalls - 1;
  return c.algos[index];
}

Algo PlanTuner::choose(size_t bytes, Algo usual, Algo alternative) {
  SizeClass& c = classes_[sizeClassOf(bytes)];
  c.algos[0] = usual;
  c.algos[1] = alternative;
  if (c.runLeft > 0) {
    --c.runLeft;
    return c.algos[c.runOf];
  }
  // Measure each at least once, then prefer the faster but retry the slower now and then, so that
  // a change of the machine is noticed: every kExploreEvery runs' worth of calls times how much
  // slower it is, so the retries cost at most 1/kExploreEvery of the time whatever the gap. (A
  // fixed 1 in 16 cost 25% at 4 MiB all-gather while the ring took 1400 us a call against direct
  // reads' 275.)
  for (int i = 0; i < 2; ++i)
    if (c.estimates[i].secondsPerByte == 0) return startRun(c, i);
  const int best = c.estimates[0].secondsPerByte <= c.estimates[1].secondsPerByte ? 0 : 1;
  const double slowdown = c.estimates[1 - best].secondsPerByte / c.estimates[best].secondsPerByte;
  const double every = kExploreEvery * kRunCalls * std::min(slowdown, kMaxSlowdown);
  if (++c.sinceRetry >= every) {
    c.sinceRetry = 0;
    return startRun(c, 1 - best);
  }
  return c.algos[best];
}

void PlanTuner::record(size_t bytes, Algo algo, double seconds) {
  if (bytes == 0) return;
  SizeClass& c = classes_[sizeClassOf(bytes)];
  for (int i = 0; i < 2; ++i) {
    if (c.algos[i] != algo) continue;
    // The first call after a switch of plan (or the very first) times the switch: not recorded.
    const bool afterSwitch = c.lastReported != i;
    c.lastReported = i;
    if (afterSwitch) return;
    double sample = seconds / static_cast<double>(bytes);
    Estimate& e = c.estimates[i];
    e.secondsPerByte = e.secondsPerByte == 0 ? sample : (1 - kNewWeight) * e.secondsPerByte + kNewWeight * sample;
    return;
  }
}

}  // namespace coll
