#include "src/plan/host_planner.h"

#include <string.h>

#include <algorithm>
#include <iterator>

#include "common/error.h"
#include "src/plan/planner.h"

namespace coll {
namespace {

// The arrays a variable-count call carries (absent ones null), and the key's head: which of them
// are there, the call's scalars, and its datatype (an all-to-all-v's steps carry the call's tag,
// which names it).
struct CountsView {
  const size_t* arrays[4];
  size_t head[5];
  size_t present = 0;
  explicit CountsView(const CollCall& call) {
    const VariableCounts& c = *call.counts;
    const size_t* carried[4] = {c.sendcounts, c.sdispls, c.recvcounts, c.rdispls};
    size_t which = 0;
    for (size_t i = 0; i < 4; ++i) {
      arrays[i] = carried[i];
      present += carried[i] != nullptr;
      which |= size_t{carried[i] != nullptr} << i;
    }
    const size_t scalars[5] = {which, c.sendcount, c.sendElems, c.recvElems, static_cast<size_t>(call.datatype)};
    std::copy(scalars, scalars + 5, head);
  }
};

}  // namespace

bool HostPlanner::CountsKey::matches(const CollCall& call, int nranks) const {
  const CountsView view(call);
  const size_t n = static_cast<size_t>(nranks);
  constexpr size_t kHead = sizeof(view.head) / sizeof(size_t);
  if (values_.size() != kHead + view.present * n || memcmp(values_.data(), view.head, sizeof(view.head)) != 0)
    return false;
  const size_t* kept = values_.data() + kHead;
  for (const size_t* array : view.arrays) {
    if (array == nullptr) continue;
    if (memcmp(kept, array, n * sizeof(size_t)) != 0) return false;
    kept += n;
  }
  return true;
}

void HostPlanner::CountsKey::keep(const CollCall& call, int nranks) {
  const CountsView view(call);
  values_.assign(std::begin(view.head), std::end(view.head));
  for (const size_t* array : view.arrays)
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
