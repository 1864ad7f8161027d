// The host engine's planner: one call in, what runs it out (RunnableCall), asked once per call.
// It picks the row (planner.h), and where the plan offers two, takes rank 0's measured choice
// through the tuner's lease (tuner.h: SharedChoices), so that every rank runs the same one; then it
// hands over either the row's native runner, made at its first use, or this rank's schedule of the
// call. Plans and schedules are kept for repeated calls: a training loop repeats the same calls,
// and planning or building them again would cost a noticeable share of a small call.
#pragma once

#include <memory>
#include <vector>

#include "src/algorithms/algorithm_table.h"
#include "src/algorithms/native.h"
#include "src/algorithms/plan_context.h"
#include "src/algorithms/schedule.h"
#include "src/coll_call.h"
#include "src/plan/tuner.h"

namespace coll {

// What runs one call: exactly one of `native` and `schedule`. Kept alive while the call runs: on
// rank 0 its lease times a call whose plan was chosen by measurement, and reports the time when
// the call ends.
struct RunnableCall {
  Algo algo = Algo::kAuto;
  NativeRunner* native = nullptr;      // a native row's runner, or
  const Schedule* schedule = nullptr;  // a schedule row's schedule of this rank for this call (the planner's)
  LeasedCall lease;
};

class HostPlanner {
 public:
  // `natives`: what a native row's runner is made with (its memory may be null: no native rows).
  HostPlanner(const PlanContext& context, const NativeArgs& natives);
  // What runs `call` on this rank. `waiter` waits for the other ranks where they agree on a
  // measured choice. Throws collInvalidUsage where COLL_ALGO forces a row that cannot run it.
  RunnableCall plan(const CollCall& call, PeerWaiter& waiter) {
    // A repeated call with no alternative (every small call) is answered here, inline: on such a
    // call the rest would weigh.
    const KeptPlan& kept = keptPlans_[static_cast<int>(call.type)];
    if (kept.count == call.count && kept.elemSize == call.elemSize && kept.filledBlocks == filledBlocksOf(call)) {
      RunnableCall runnable;
      runnable.algo = kept.plan.algo;
      if (kept.onlyRunner != nullptr) {
        runnable.native = kept.onlyRunner;
        return runnable;
      }
      if (kept.schedule != nullptr && kept.root == call.root && kept.averages == (call.op == collAvg)) {
        runnable.schedule = kept.schedule;
        return runnable;
      }
    }
    return planAny(call, waiter);
  }

 private:
  static size_t filledBlocksOf(const CollCall& call) { return call.counts != nullptr ? call.counts->filledBlocks : 0; }
  NativeRunner& native(Algo algo);
  // The plan of `call`, kept per collective for the last call's count and element size, and what
  // runs it where nothing else can (no alternative): the row's native runner, or the kept
  // schedule with the root and op it was built for (variable counts: none).
  struct KeptPlan {
    bool valid = false;
    size_t count = 0;
    size_t elemSize = 0;
    size_t filledBlocks = 0;  // variable counts: a plan may follow how many blocks hold elements
    Plan plan;
    NativeRunner* onlyRunner = nullptr;
    const Schedule* schedule = nullptr;
    int root = 0;
    bool averages = false;
  };
  KeptPlan& planFor(const CollCall& call);
  RunnableCall planAny(const CollCall& call, PeerWaiter& waiter);
  // The schedule of a schedule row, kept per collective for the last call it was built for: a
  // schedule depends on the call's shape (count, element size, root, whether the op averages),
  // a variable-count call's arrays and the plan, never on its buffers, and building it allocates
  // and fills a vector of steps.
  const Schedule& scheduleFor(const CollCall& call, const Plan& plan);

  const PlanContext& context_;
  NativeArgs nativeArgs_;
  std::vector<std::unique_ptr<NativeRunner>> natives_;  // indexed by Algo, made at first use
  KeptPlan keptPlans_[static_cast<int>(CollType::kCount)];

  // What a schedule row's schedule depends on besides the rank and the communicator. The default
  // (kAuto) matches no call's: no schedule row is kAuto, so a collective's first call builds.
  struct ScheduleShape {
    Algo algo = Algo::kAuto;
    size_t maxStepElems = 0;
    size_t count = 0;
    size_t elemSize = 0;
    int root = 0;
    bool averages = false;
    bool operator==(const ScheduleShape& o) const {
      return algo == o.algo && maxStepElems == o.maxStepElems && count == o.count && elemSize == o.elemSize &&
             root == o.root && averages == o.averages;
    }
  };
  // A variable-count call's arrays and datatype, as its schedule follows them: a loop that
  // repeats its calls with the same arrays reuses the schedule, and the same total split
  // otherwise builds anew.
  class CountsKey {
   public:
    bool matches(const CollCall& call, int nranks) const;
    void keep(const CollCall& call, int nranks);

   private:
    // The datatype (an all-to-all-v's steps carry the call's tag, which names it), then each
    // array's nranks entries.
    std::vector<size_t> values_;
  };
  struct KeptSchedule {
    ScheduleShape shape;
    CountsKey counts;  // variable-count collectives only
    Schedule schedule;
  };
  KeptSchedule keptSchedules_[static_cast<int>(CollType::kCount)];
  SharedChoices choices_;
};

}  // namespace coll
