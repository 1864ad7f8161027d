#include "src/algorithms/cost_model.h"

#include <algorithm>

#include "src/collective_table.h"
#include "transport/transport_table.h"

namespace coll {

int ceilLog2(int n) {
  int levels = 0;
  while ((1 << levels) < n) ++levels;
  return levels;
}

void describeNetworkLink(PlanContext& ctx, const std::vector<const transport::TransportEntry*>& used,
                         const LinkCosts& costs) {
  ctx.localLink = costs.of(transport::MemoryKind::kHost, transport::LinkKind::kLocal, used);
  const transport::TransportEntry& network =
      transport::pricedEntry(transport::MemoryKind::kHost, transport::LinkKind::kNetwork, used);
  ctx.networkLink = costs.of(network.price.name);
  ctx.networkLinkName = network.price.name;
}

LinkCost stagedLink(const LinkCost& network, const LinkCost& staging) {
  return LinkCost{network.latencyUs + staging.latencyUs, std::min(network.bytesPerUs, staging.bytesPerUs)};
}

const LinkCost& slowestLink(const PlanContext& ctx) { return ctx.crossesNetwork ? ctx.networkLink : ctx.localLink; }

size_t callBytes(const CollCall& call) { return call.count * call.elemSize; }

size_t stepBytes(const PlanContext& ctx) {
  return std::max<size_t>(ctx.slotBytes, ctx.slotBytes * static_cast<size_t>(ctx.fifoDepth / 2));
}

size_t oneshotInputBytes(const CollCall& call, int nranks) {
  // What the rank that sends the most publishes: its whole send buffer, the root's for rooted
  // collectives (the collective's row says how many counts that is).
  const CollectiveRow& row = collectiveRow(call.type);
  if (!row.hasData) return 0;
  if (row.variableCounts) return callBytes(call);
  return callBytes(call) * row.sendMultiple(call.root, call.root, nranks);
}

double pipelineUs(const CollCall& call, int n) {
  // Reduce-scatter then all-gather: per step a slot is written and read once more than the data.
  double fraction = static_cast<double>(n - 1) / n;
  // A collective that reduces every rank's whole input into every rank (all-reduce) runs both
  // halves; the others one.
  const bool bothHalves = reducesIntoEveryRank(collectiveRow(call.type));
  double traffic = bothHalves ? 2 * fraction * 3.0 : fraction * 3.0;
  return kStepLatencyUs * 2 * (n - 1) + oneshotInputBytes(call, n) * traffic / kCopyBytesPerUs;
}

}  // namespace coll
