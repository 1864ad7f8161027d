// The measured choice between two plans (src/plan/tuner.h), driven with simulated call times:
// each plan is timed once before either is preferred, the faster one is then taken, retries of the
// slower cost at most about 1/32 of the time however much slower it is, and a machine that changes
// which plan is faster is followed within a bounded number of calls.
#include <gtest/gtest.h>

#include <cstddef>

#include "src/plan/tuner.h"

namespace coll {
namespace {

constexpr size_t kBytes = 4 << 20;
constexpr Algo kRingPlan = Algo::kRing;
constexpr Algo kDirectPlan = Algo::kDirectRead;

// One call: the tuner's choice, timed as `ringUs` or `directUs`; returns the time it took.
double callOnce(PlanTuner& tuner, double ringUs, double directUs, Algo* chosen = nullptr) {
  const Algo algo = tuner.choose(kBytes, kRingPlan, kDirectPlan);
  const double us = algo == kRingPlan ? ringUs : directUs;
  tuner.record(kBytes, algo, us * 1e-6);
  if (chosen != nullptr) *chosen = algo;
  return us;
}

TEST(PlanTuner, TimesEachPlanOnceBeforePreferringOne) {
  PlanTuner tuner;
  Algo first, second;
  callOnce(tuner, 100, 50, &first);
  callOnce(tuner, 100, 50, &second);
  EXPECT_NE(first, second);
  Algo third;
  callOnce(tuner, 100, 50, &third);
  EXPECT_EQ(third, kDirectPlan);
}

// The time lost to retries, relative to always taking the faster plan, stays near 1/32 whether
// the slower plan is 1.5x or 50x slower (a retry every 16 calls lost 25% at a 5x gap).
TEST(PlanTuner, RetriesOfTheSlowerPlanCostLittleWhateverTheGap) {
  for (double slowdown : {1.5, 5.0, 50.0}) {
    PlanTuner tuner;
    const double fastUs = 275, slowUs = fastUs * slowdown;
    double total = 0;
    int retries = 0;
    const int calls = 20000;
    for (int i = 0; i < calls; ++i) {
      Algo chosen;
      total += callOnce(tuner, slowUs, fastUs, &chosen);
      retries += chosen == kRingPlan ? 1 : 0;
    }
    const double overhead = total / (calls * fastUs) - 1;
    EXPECT_GT(retries, 1) << "slowdown " << slowdown << ": the slower plan is never retried";
    EXPECT_LT(overhead, 1.0 / 32 + 0.005) << "slowdown " << slowdown << ": " << retries << " retries";
  }
}

TEST(PlanTuner, FollowsAMachineThatChangesWhichPlanIsFaster) {
  PlanTuner tuner;
  for (int i = 0; i < 1000; ++i) callOnce(tuner, 1400, 275);  // direct reads win
  // Now the ring is 5x faster than direct reads (the cores came to share a cache).
  int switchedAfter = -1;
  for (int i = 0; i < 5000 && switchedAfter < 0; ++i) {
    Algo chosen;
    callOnce(tuner, 190, 950, &chosen);
    Algo next;
    callOnce(tuner, 190, 950, &next);
    if (chosen == kRingPlan && next == kRingPlan) switchedAfter = 2 * i + 2;
  }
  ASSERT_GE(switchedAfter, 0) << "still on direct reads after 10000 calls";
  // One retry at the old gap (1400/275 = 5.1x: every 163 calls) shows the change.
  EXPECT_LE(switchedAfter, 32 * 6 + 4);
}

}  // namespace
}  // namespace coll
