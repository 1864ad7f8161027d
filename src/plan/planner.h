// The planner: picks the algorithm and the pipeline step size for one call from the algorithm
// table (src/algorithms/algorithm_table.h), unless COLL_ALGO forces one. It depends only on
// arguments that are equal on every rank, so every rank picks the same plan.
//
// Choosing: a row forced by COLL_ALGO must serve the collective, fit the context's limit on
// peers per step, and be able to run; otherwise the candidates are the rows that serve the call,
// can run it and are eligible for it (or, where none of those can run, every row that can), and
// the least modelled time wins (ties: the earlier row).
// An eligible shortcut row (one-shot) is taken over them, and an eligible alternative row
// (direct reads) is offered beside the choice for rank 0's tuner to time (tuner.h).
#pragma once

#include <cstddef>
#include <vector>

#include "src/algorithms/algorithm_table.h"
#include "src/algorithms/cost_model.h"
#include "src/algorithms/plan_context.h"
#include "src/algorithms/schedule.h"
#include "src/coll_call.h"
#include "src/params.h"

namespace coll {

// Throws collInvalidUsage when COLL_ALGO forces an algorithm that cannot run this call. The plan
// depends only on the call's collective, count and element size, and on the context.
Plan planCall(const CollCall& call, const PlanContext& context);

// The schedule of `rank` for a call planned with a schedule-based algorithm (its row's builder),
// with the context's host layout (rings in host order, two-level all-reduce).
Schedule buildSchedule(const CollCall& call, const Plan& plan, int rank, const PlanContext& context);
// The same for ranks that all share one host, in rank order.
Schedule buildSchedule(const CollCall& call, const Plan& plan, int rank, int nranks);

// The schedule of a group of sends and receives (the host executor's and the device lowering's):
// one byte-typed step per non-empty call, all joined so that they progress together.
Schedule pointToPointSchedule(const std::vector<CollCall>& calls);
// The same into `schedule`, whose vector keeps its capacity from call to call (no allocation on a
// repeated small send/receive).
void fillPointToPointSchedule(const std::vector<CollCall>& calls, Schedule& schedule);

// The modelled time of an all-reduce of `bytes` with `algo` in this context, in microseconds:
// its row's model, for colltopo and the tests.
double modelAllReduceUs(Algo algo, size_t bytes, const PlanContext& context);

}  // namespace coll
