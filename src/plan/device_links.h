// The cost model's device rows for the GPUs of one host, from how they connect
// (topo/gpu_topology.h): what a hop between two GPUs costs, the host's local link for the
// planner (its slowest pair: a plan in lock step goes at its slowest link's pace), and whether a
// pair must be staged through host memory because neither NVLink nor PCIe peer access joins it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/algorithms/plan_context.h"
#include "topo/gpu_topology.h"

namespace coll {

// NVLink (or one GPU, one board): the device-local row. PCIe peer access: its latency at the
// staging row's rate (both cross the same PCIe links). Across NUMA nodes or sockets: the inter-socket
// link halves that. Unknown: as PCIe, the common case.
LinkCost gpuLinkCost(topo::GpuLinkKind kind, const LinkCosts& costs);
// The slowest link between any two of the GPUs; the device-local row for one GPU or none.
LinkCost slowestGpuLink(const topo::GpuTopology& gpus, const LinkCosts& costs);
// The slowest link among the GPUs `busIds` names (those `gpus` knows); the device-local row for
// fewer than two.
LinkCost slowestGpuLinkAmong(const topo::GpuTopology& gpus, const std::vector<std::string>& busIds,
                             const LinkCosts& costs);
// Whether device memory between GPUs a and b must be staged: different GPUs without peer access.
bool needsStaging(const topo::GpuTopology& gpus, int a, int b);

// Every rank must plan with the same costs, so each sends the price of its island's slowest GPU
// link (none: it found none) through the store and all take the slowest of them.
std::vector<uint8_t> encodeGpuLinkPrice(const std::optional<LinkCost>& mine);
// The slowest of the prices `byRank` holds (none where no rank found one). What a peer sent is
// checked: a record of another size, a latency below zero or a rate not above zero, or a value
// that is not a number, throws collRemoteError naming the rank.
std::optional<LinkCost> slowestGpuLinkPrice(const std::vector<std::vector<uint8_t>>& byRank);

}  // namespace coll
