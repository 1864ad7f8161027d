// The planner: picks the algorithm and the pipeline step size for one call from a small cost
// model (latency per synchronisation plus bytes over bandwidth), unless COLL_ALGO forces one.
// It depends only on arguments that are equal on every rank, so every rank picks the same plan.
#pragma once

#include <cstddef>
#include <vector>

#include "src/algorithms/schedule.h"
#include "src/coll_call.h"
#include "src/params.h"

namespace coll {

// What one hop over a kind of link costs: a fixed latency per synchronisation (one pipeline step
// or one message) and a streaming rate.
struct LinkCost {
  double latencyUs;
  double bytesPerUs;
};

struct PlanContext {
  int nranks = 1;
  bool oneshotAvailable = false;     // every rank on this host, sharing memory
  bool directReadAvailable = false;  // and each may read the others' memory (cross-memory attach)
  size_t directReadBytes = 0;        // per-rank input from which direct reads win (0: never)
  size_t oneshotBytes = 0;           // capacity of one one-shot buffer
  size_t slotBytes = 0;              // transport slot size
  int fifoDepth = 2;
  const Algo* overrides = nullptr;  // per CollType, from COLL_ALGO
  // Ranks that share memory, host by host (hierarchy.cc's HostLayout); empty means one group of
  // nranks. ringOrder visits them host by host. Equal on every rank.
  std::vector<std::vector<int>> hosts;
  std::vector<int> ringOrder;
  bool crossesNetwork = false;  // some pair of ranks talks over sockets
  int treeNetLevels = 0;        // levels of the binomial tree (rooted at rank 0) with an edge over sockets
  LinkCost shmLink{1.5, 10000.0};
  LinkCost netLink{8.0, 2000.0};
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

// The schedule of `rank` for a call planned with a schedule-based algorithm, with the context's
// host layout (rings in host order, two-level all-reduce).
Schedule buildSchedule(const CollCall& call, const Plan& plan, int rank, const PlanContext& context);
// The same for ranks that all share one host, in rank order.
Schedule buildSchedule(const CollCall& call, const Plan& plan, int rank, int nranks);

// The schedule of a group of sends and receives (the host executor's and the device lowering's):
// one byte-typed step per non-empty call, all joined so that they progress together.
Schedule pointToPointSchedule(const std::vector<CollCall>& calls);

// The modelled time of an all-reduce of `bytes` with `algo` (ring, tree, dbtree or hier) in this
// context, in microseconds; what planCall compares across hosts, and what colltopo prints.
double modelAllReduceUs(Algo algo, size_t bytes, const PlanContext& context);

}  // namespace coll
