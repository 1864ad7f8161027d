#include "src/plan/planner.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "common/logging.h"
#include "src/call_tag.h"

namespace coll {
namespace {

// Whether `row` can run `call` here. Only when asked (why != nullptr: COLL_ALGO forced it) does it
// say why not: the automatic path runs on every call and must not build messages.
bool runnable(const AlgorithmRow& row, const CollCall& call, const PlanContext& ctx, std::string* why) {
  if (!serves(row, call.type)) {
    if (why != nullptr) *why = formatString("algorithm %s cannot run %s", row.name, collTypeName(call.type));
    return false;
  }
  int peers = row.peersPerStep(ctx);
  if (peers > ctx.maxStepPeers) {
    if (why != nullptr)
      *why = formatString("%s needs %d peers per step on %d ranks; %s buffers allow %d", row.name, peers, ctx.nranks,
                          ctx.deviceMemory ? "device" : "host", ctx.maxStepPeers);
    return false;
  }
  return row.canRun(call, ctx, why);
}

}  // namespace

Plan planCall(const CollCall& call, const PlanContext& ctx) {
  Plan plan;
  plan.maxStepElems = std::max<size_t>(1, stepBytes(ctx) / call.elemSize);

  Algo forced = ctx.overrides != nullptr ? ctx.overrides[static_cast<int>(call.type)] : Algo::kAuto;
  if (forced != Algo::kAuto) {
    std::string why;
    if (runnable(algorithmRow(forced), call, ctx, &why)) {
      plan.algo = forced;
      return plan;
    }
    const bool whereRunnable =
        ctx.overridesWhereRunnable != nullptr && ctx.overridesWhereRunnable[static_cast<int>(call.type)];
    if (!whereRunnable) throwError(collInvalidUsage, "COLL_ALGO: %s", why.c_str());
    COLL_TRACE(kPlan, "COLL_ALGO does not apply to this %s (%zu elements): %s; chosen as usual", collTypeName(call.type),
               call.count, why.c_str());
  }
  // One pass over the table: the cheapest eligible modelled row, and the first eligible
  // alternative, shortcut and preferred row (which wins over all: the table says where). Where no
  // eligible modelled row can run here (the device's peer limit ruled out the one the measurements
  // prefer), a second pass takes every runnable one.
  const AlgorithmRow* chosen = nullptr;
  const AlgorithmRow* alternative = nullptr;
  const AlgorithmRow* shortcut = nullptr;
  const AlgorithmRow* preferred = nullptr;
  double chosenUs = 0;
  for (bool onlyEligible : {true, false}) {
    for (const AlgorithmRow& row : algorithmTable()) {
      if (!runnable(row, call, ctx, nullptr)) continue;
      if (onlyEligible && preferred == nullptr && row.preferred != nullptr && row.preferred(call, ctx))
        preferred = &row;
      bool eligible = row.eligible(call, ctx);
      if (row.selection == Selection::kAlternative) {
        if (eligible && alternative == nullptr && onlyEligible) alternative = &row;
      } else if (row.selection == Selection::kShortcut) {
        if (eligible && shortcut == nullptr && onlyEligible) shortcut = &row;
      } else if (eligible || !onlyEligible) {
        double us = row.modelUs(call, ctx);
        if (chosen == nullptr || us < chosenUs) chosen = &row, chosenUs = us;
      }
    }
    if (chosen != nullptr) break;
  }
  if (chosen == nullptr)
    throwError(collInvalidUsage,
               "%s on %d ranks: no algorithm of the table can run it with %s buffers (at most %d peers "
               "per step)",
               collTypeName(call.type), ctx.nranks, ctx.deviceMemory ? "device" : "host", ctx.maxStepPeers);
  plan.algo = chosen->id;
  if (alternative != nullptr) plan.alternative = alternative->id;
  if (shortcut != nullptr) plan.algo = shortcut->id;
  if (preferred != nullptr) plan.algo = preferred->id, plan.alternative = Algo::kAuto;
  return plan;
}

Schedule pointToPointSchedule(const std::vector<CollCall>& calls) {
  Schedule schedule;
  fillPointToPointSchedule(calls, schedule);
  return schedule;
}

void fillPointToPointSchedule(const std::vector<CollCall>& calls, Schedule& schedule) {
  // Bytes, whatever each call's datatype: one schedule carries calls of different types.
  schedule.steps.clear();
  schedule.algorithm = "p2p";
  for (const CollCall& call : calls) {
    const size_t bytes = call.count * call.elemSize;
    if (bytes == 0) continue;
    Step& step = schedule.add(bytes);
    step.tag = callTagOf(call);
    if (call.type == CollType::kSend) {
      step.src = atAddress(call.sendbuff);
      step.sendTo(call.peer);
    } else {
      step.dst = atAddress(call.recvbuff);
      step.recvFrom(call.peer);
    }
    step.joinNext = true;
  }
  if (!schedule.steps.empty()) schedule.steps.back().joinNext = false;
}

Schedule buildSchedule(const CollCall& call, const Plan& plan, int rank, int n) {
  PlanContext context;
  context.nranks = n;
  return buildSchedule(call, plan, rank, context);
}

Schedule buildSchedule(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx) {
  const AlgorithmRow& row = algorithmRow(plan.algo);
  if (row.build == nullptr)
    throwError(collInternalError, "buildSchedule: %s runs natively and has no schedule", row.name);
  return row.build(call, plan, rank, ctx);
}

double modelAllReduceUs(Algo algo, size_t bytes, const PlanContext& ctx) {
  CollCall call;
  call.type = CollType::kAllReduce;
  call.datatype = collUint8;
  call.elemSize = 1;
  call.count = bytes;
  return algorithmRow(algo).modelUs(call, ctx);
}

}  // namespace coll
