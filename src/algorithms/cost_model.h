// The shared pieces of the algorithms' cost models (docs/algorithms.md, "The cost model"): a hop
// costs its link's latency per synchronisation plus bytes over the link's rate; a pipeline in
// lock step goes at the pace of its slowest link. Each algorithm's own model is beside its
// builder; these are the terms they share.
#pragma once

#include <cstddef>
#include <vector>

#include "src/algorithms/plan_context.h"
#include "src/coll_call.h"

namespace coll {

// Shared memory on one host, from the measurements in docs/performance.md: a flag round trip
// between cores, a pipeline step, and the rate at which one core streams bytes through its caches.
constexpr double kOneshotLatencyUs = 0.5;
constexpr double kStepLatencyUs = 1.5;
constexpr double kCopyBytesPerUs = 10000.0;  // bytes per microsecond

int ceilLog2(int n);
// What the hops of host memory cost where the routes take the transports `used` (equal on every
// rank): localLink between ranks that share memory, networkLink (and its name) for the
// inter-host hops, each the price of the entry transport::pricedEntry picks.
void describeNetworkLink(PlanContext& ctx, const std::vector<const transport::TransportEntry*>& used,
                         const LinkCosts& costs);
// A network hop for device memory staged through pinned host memory: the network's latency plus
// the staging's, at the slower of the two rates (the proxy pipelines slices, so the two overlap).
LinkCost stagedLink(const LinkCost& network, const LinkCost& staging);
// The network's link when some pair of ranks crosses it, else shared memory's.
const LinkCost& slowestLink(const PlanContext& ctx);
// The call's count in bytes (per rank, per block for gather-like calls).
size_t callBytes(const CollCall& call);
// The most bytes one pipelined step moves: half a FIFO (ring.cc says why), at least a slot.
size_t stepBytes(const PlanContext& ctx);
// Bytes one rank publishes for the one-shot path (its whole input).
size_t oneshotInputBytes(const CollCall& call, int nranks);
// What a FIFO pipeline on one host costs for this call: the yardstick the one-shot path beats
// or not.
double pipelineUs(const CollCall& call, int nranks);

}  // namespace coll
