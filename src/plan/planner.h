// The planner: picks the algorithm and the pipeline step size for one call from a small cost
// model (latency per synchronisation plus bytes over bandwidth), unless COLL_ALGO forces one.
// It depends only on arguments that are equal on every rank, so every rank picks the same plan.
#pragma once

#include <cstddef>

#include "src/algorithms/schedule.h"
#include "src/coll_call.h"
#include "src/params.h"

namespace coll {

struct PlanContext {
  int nranks = 1;
  bool oneshotAvailable = false;  // every rank on this host, sharing memory
  bool directReadAvailable = false;  // and each may read the others' memory (cross-memory attach)
  size_t directReadBytes = 0;        // per-rank input from which direct reads win (0: never)
  size_t oneshotBytes = 0;        // capacity of one one-shot buffer
  size_t slotBytes = 0;           // transport slot size
  int fifoDepth = 2;
  const Algo* overrides = nullptr;  // per CollType, from COLL_ALGO
};

struct Plan {
  Algo algo = Algo::kRing;
  // When not kAuto, an equally valid plan whose speed depends on the machine's state: the caller
  // picks between the two by measurement (tuner.h).
  Algo alternative = Algo::kAuto;
  size_t maxStepElems = 0;
};

// Bytes one rank publishes for the one-shot path (its whole input).
size_t oneshotInputBytes(const CollCall& call, int nranks);

// Throws collInvalidUsage when COLL_ALGO forces an algorithm that cannot run this call.
Plan planCall(const CollCall& call, const PlanContext& context);

// The schedule of `rank` for a call planned with a schedule-based algorithm.
Schedule buildSchedule(const CollCall& call, const Plan& plan, int rank, int nranks);

}  // namespace coll
