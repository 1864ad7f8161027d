#include "src/plan/tuner.h"

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

Algo PlanTuner::choose(size_t bytes, Algo usual, Algo alternative) {
  SizeClass& c = classes_[sizeClassOf(bytes)];
  c.algos[0] = usual;
  c.algos[1] = alternative;
  ++c.calls;
  // Measure each at least once, then prefer the faster but retry the slower every kExploreEvery
  // calls so that a change of the machine is noticed.
  for (int i = 0; i < 2; ++i)
    if (c.estimates[i].secondsPerByte == 0) return c.algos[i];
  int best = c.estimates[0].secondsPerByte <= c.estimates[1].secondsPerByte ? 0 : 1;
  return c.algos[c.calls % kExploreEvery == 0 ? 1 - best : best];
}

void PlanTuner::record(size_t bytes, Algo algo, double seconds) {
  if (bytes == 0) return;
  SizeClass& c = classes_[sizeClassOf(bytes)];
  for (int i = 0; i < 2; ++i) {
    if (c.algos[i] != algo) continue;
    double sample = seconds / static_cast<double>(bytes);
    Estimate& e = c.estimates[i];
    e.secondsPerByte = e.secondsPerByte == 0 ? sample : (1 - kNewWeight) * e.secondsPerByte + kNewWeight * sample;
  }
}

}  // namespace coll
