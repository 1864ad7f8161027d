#include "src/plan/host_planner.h"

#include <string.h>

#include <array>

#include "common/error.h"
#include "src/plan/planner.h"

namespace coll {
namespace {

// The arrays a variable-count call carries (null where its collective has none, alike for every
// call of it); the other fields of VariableCounts follow from them.
std::array<const size_t*, 4> arraysOf(const VariableCounts& c) {
  return {c.sendcounts, c.sdispls, c.recvcounts, c.rdispls};
}

}  // namespace

bool HostPlanner::CountsKey::matches(const CollCall& call, int nranks) const {
  const size_t n = static_cast<size_t>(nranks);
  if (values_.empty() || values_[0] != static_cast<size_t>(call.datatype)) return false;
  const size_t* kept = values_.data() + 1;
  const size_t* end = values_.data() + values_.size();
  for (const size_t* array : arraysOf(*call.counts)) {
    if (array == nullptr) continue;
    if (static_cast<size_t>(end - kept) < n || memcmp(kept, array, n * sizeof(size_t)) != 0) return false;
    kept += n;
  }
  return kept == end;
}

void HostPlanner::CountsKey::keep(const CollCall& call, int nranks) {
  values_.assign(1, static_cast<size_t>(call.datatype));
  for (const size_t* array : arraysOf(*call.counts))
    if (array != nullptr) values_.insert(values_.end(), array, array + nranks);
}

HostPlanner::HostPlanner(const PlanContext& context, const NativeArgs& natives)
    : context_(context), nativeArgs_(natives), natives_(kAlgoIdCount), choices_(natives.rank) {}

NativeRunner& HostPlanner::native(Algo algo) {
  std::unique_ptr<NativeRunner>& runner = natives_[static_cast<size_t>(algo)];
  if (!runner) {
    const AlgorithmRow& row = algorithmRow(algo);
    if (row.makeNative == nullptr || nativeArgs_.memory == nullptr)
      throwError(collInternalError, "%s cannot run natively on this communicator", row.name);
    runner = row.makeNative(nativeArgs_);
  }
  return *runner;
}

HostPlanner::KeptPlan& HostPlanner::planFor(const CollCall& call) {
  KeptPlan& kept = keptPlans_[static_cast<int>(call.type)];
  if (!kept.valid || kept.count != call.count || kept.elemSize != call.elemSize ||
      kept.filledBlocks != filledBlocksOf(call)) {
    kept.valid = false;
    kept.onlyRunner = nullptr;
    kept.schedule = nullptr;
    kept.plan = planCall(call, context_);
    // A native row's runner is found here once, not on every call (plan's inline answer).
    if (kept.plan.alternative == Algo::kAuto && algorithmRow(kept.plan.algo).makeNative != nullptr)
      kept.onlyRunner = &native(kept.plan.algo);
    kept.valid = true;
    kept.count = call.count;
    kept.elemSize = call.elemSize;
    kept.filledBlocks = filledBlocksOf(call);
  }
  return kept;
}

const Schedule& HostPlanner::scheduleFor(const CollCall& call, const Plan& plan) {
  KeptSchedule& kept = keptSchedules_[static_cast<int>(call.type)];
  const ScheduleShape shape{plan.algo, plan.maxStepElems, call.count, call.elemSize, call.root, call.op == collAvg};
  const bool variable = call.counts != nullptr;
  if (!(kept.shape == shape) || (variable && !kept.counts.matches(call, context_.nranks))) {
    keptPlans_[static_cast<int>(call.type)].schedule = nullptr;  // until planAny says whose it is
    // The key changes only once the schedule is built: a build that throws keeps the old pair.
    kept.schedule = buildSchedule(call, plan, nativeArgs_.rank, context_);
    kept.shape = shape;
    if (variable) kept.counts.keep(call, context_.nranks);
  }
  return kept.schedule;
}

RunnableCall HostPlanner::planAny(const CollCall& call, PeerWaiter& waiter) {
  RunnableCall runnable;
  KeptPlan& kept = planFor(call);
  if (kept.plan.alternative == Algo::kAuto) {
    runnable.algo = kept.plan.algo;
    runnable.native = kept.onlyRunner;
    if (runnable.native != nullptr) return runnable;
    runnable.schedule = &scheduleFor(call, kept.plan);
    if (call.counts == nullptr) {
      kept.schedule = runnable.schedule;
      kept.root = call.root;
      kept.averages = call.op == collAvg;
    }
    return runnable;
  }
  // Two valid plans: rank 0's tuner picks, and every rank hears its choice once per lease.
  runnable.lease = choices_.choose(call, kept.plan.algo, kept.plan.alternative, native(Algo::kOneShot), waiter);
  Plan plan = kept.plan;
  plan.algo = runnable.lease.algo();
  runnable.algo = plan.algo;
  runnable.native = natives_[static_cast<size_t>(plan.algo)].get();
  if (runnable.native == nullptr && algorithmRow(plan.algo).makeNative != nullptr) runnable.native = &native(plan.algo);
  if (runnable.native == nullptr) runnable.schedule = &scheduleFor(call, plan);
  return runnable;
}

}  // namespace coll
