#include "src/plan/device_links.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"

#include "transport/transport_table.h"

namespace coll {

LinkCost gpuLinkCost(topo::GpuLinkKind kind, const LinkCosts& costs) {
  using topo::GpuLinkKind;
  const LinkCost& peer = costs.of(transport::MemoryKind::kDevice, transport::LinkKind::kLocal);
  const LinkCost& staging = costs.of(transport::MemoryKind::kDevice, transport::LinkKind::kNetwork);
  const LinkCost pcie{peer.latencyUs, std::min(peer.bytesPerUs, staging.bytesPerUs)};
  switch (kind) {
    case GpuLinkKind::kSame:
    case GpuLinkKind::kNvlink:
    case GpuLinkKind::kBoard:
      return peer;
    case GpuLinkKind::kNumaNode:
    case GpuLinkKind::kSystem:
      return LinkCost{pcie.latencyUs + 1.0, pcie.bytesPerUs / 2};
    default:
      return pcie;
  }
}

LinkCost slowestGpuLink(const topo::GpuTopology& gpus, const LinkCosts& costs) {
  LinkCost slowest = costs.of(transport::MemoryKind::kDevice, transport::LinkKind::kLocal);
  for (const auto& row : gpus.links)
    for (const topo::GpuLink& link : row) {
      const LinkCost c = gpuLinkCost(link.kind, costs);
      if (c.bytesPerUs < slowest.bytesPerUs) slowest.bytesPerUs = c.bytesPerUs;
      if (c.latencyUs > slowest.latencyUs) slowest.latencyUs = c.latencyUs;
    }
  return slowest;
}

LinkCost slowestGpuLinkAmong(const topo::GpuTopology& gpus, const std::vector<std::string>& busIds,
                             const LinkCosts& costs) {
  std::vector<size_t> chosen;
  for (size_t i = 0; i < gpus.busIds.size(); ++i)
    if (std::find(busIds.begin(), busIds.end(), gpus.busIds[i]) != busIds.end()) chosen.push_back(i);
  topo::GpuTopology subset;
  subset.links.assign(chosen.size(), std::vector<topo::GpuLink>(chosen.size()));
  for (size_t a = 0; a < chosen.size(); ++a)
    for (size_t b = 0; b < chosen.size(); ++b) subset.links[a][b] = gpus.links[chosen[a]][chosen[b]];
  return slowestGpuLink(subset, costs);
}

bool needsStaging(const topo::GpuTopology& gpus, int a, int b) {
  const topo::GpuLink& link = gpus.links.at(a).at(b);
  return link.kind != topo::GpuLinkKind::kSame && !link.peerAccess;
}

namespace {

struct GpuLinkPrice {
  double latencyUs;
  double bytesPerUs;
  uint64_t known;
};

}  // namespace

std::vector<uint8_t> encodeGpuLinkPrice(const std::optional<LinkCost>& mine) {
  const GpuLinkPrice own{mine ? mine->latencyUs : 0.0, mine ? mine->bytesPerUs : 0.0, mine ? 1u : 0u};
  std::vector<uint8_t> bytes(sizeof own);
  memcpy(bytes.data(), &own, sizeof own);
  return bytes;
}

std::optional<LinkCost> slowestGpuLinkPrice(const std::vector<std::vector<uint8_t>>& byRank) {
  std::optional<LinkCost> slowest;
  for (size_t r = 0; r < byRank.size(); ++r) {
    GpuLinkPrice p{};
    if (byRank[r].size() != sizeof p)
      throwError(collRemoteError, "rank %zu sent a GPU link price of %zu bytes, expected %zu", r, byRank[r].size(),
                 sizeof p);
    memcpy(&p, byRank[r].data(), sizeof p);
    if (p.known == 0) continue;
    // Every plan through a link priced at no number, or at a rate of nothing, would be meaningless.
    if (!std::isfinite(p.latencyUs) || p.latencyUs < 0 || !std::isfinite(p.bytesPerUs) || p.bytesPerUs <= 0)
      throwError(collRemoteError,
                 "rank %zu sent a GPU link price of %g us and %g bytes/us, expected a finite latency >= 0 and a "
                 "finite rate > 0",
                 r, p.latencyUs, p.bytesPerUs);
    if (!slowest) slowest = LinkCost{p.latencyUs, p.bytesPerUs};
    slowest->latencyUs = std::max(slowest->latencyUs, p.latencyUs);
    slowest->bytesPerUs = std::min(slowest->bytesPerUs, p.bytesPerUs);
  }
  return slowest;
}

}  // namespace coll
