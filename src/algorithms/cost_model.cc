#include "src/algorithms/cost_model.h"

#include <algorithm>

namespace coll {

int ceilLog2(int n) {
  int levels = 0;
  while ((1 << levels) < n) ++levels;
  return levels;
}

const char* networkLinkKindName(NetworkLinkKind kind) { return kind == NetworkLinkKind::kVerbs ? "verbs" : "socket"; }

void describeNetworkLink(PlanContext& ctx, bool socketRoutes, bool verbsRoutes, const LinkCosts& costs) {
  ctx.localLink = costs.sharedMemory;
  ctx.networkLinkKind = verbsRoutes && !socketRoutes ? NetworkLinkKind::kVerbs : NetworkLinkKind::kSocket;
  ctx.networkLink = ctx.networkLinkKind == NetworkLinkKind::kVerbs ? costs.verbs : costs.socket;
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
  size_t bytes = callBytes(call);
  switch (call.type) {
    case CollType::kReduceScatter:
    case CollType::kScatter:
    case CollType::kAllToAll:
      return bytes * static_cast<size_t>(nranks);
    case CollType::kBarrier:
      return 0;
    default:
      return bytes;
  }
}

double pipelineUs(const CollCall& call, int n) {
  // Reduce-scatter then all-gather: per step a slot is written and read once more than the data.
  double fraction = static_cast<double>(n - 1) / n;
  double traffic = call.type == CollType::kAllReduce ? 2 * fraction * 3.0 : fraction * 3.0;
  return kStepLatencyUs * 2 * (n - 1) + oneshotInputBytes(call, n) * traffic / kCopyBytesPerUs;
}

}  // namespace coll
