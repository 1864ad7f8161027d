// Which ranks of a host share device memory directly (CUDA IPC with peer access) and which must
// stage it through host memory, decided at a communicator's first call with a stream. Every rank
// names its GPU (its PCI bus id); each says which of its host's ranks' GPUs its own GPU may map
// (NVML's peer-access status where NVML loads, the CUDA runtime's cudaDeviceCanAccessPeer
// otherwise; a GPU always reaches itself); from every rank's answers all ranks compute the same
// device islands: ranks whose GPUs all reach one another, both ways. The device routes join the
// ranks of one island directly and stage the other pairs of a host (PeerInfo::deviceIsland).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "topo/gpu_topology.h"
#include "transport/peer_info.h"

namespace coll {
namespace transport {

// Whether the GPU with bus id `mine` may map the memory of the GPU with bus id `theirs`.
using PeerAccessProbe = std::function<bool(const std::string& mine, const std::string& theirs)>;

struct DeviceReach {
  std::vector<uint8_t> row;    // row[r] = 1: this rank's GPU may map rank r's (other hosts: 0)
  topo::GpuTopology topology;  // the distinct GPUs of this host's ranks, in rank order, as NVML says
};

// This rank's row from every rank's GPU (busIds[r]; "" where a rank could not name its GPU, which
// is taken to reach every GPU of its host, as when GPUs were not told apart). Where NVML (`nvml`,
// may be null; `nvmlWhy` says why it is) knows both GPUs, its peer-access status decides;
// elsewhere `fallback` does.
DeviceReach probeDeviceReach(int rank, const std::vector<PeerInfo>& peers, const std::vector<std::string>& busIds,
                             const topo::NvmlApi* nvml, const std::string& nvmlWhy, const PeerAccessProbe& fallback);
// The same with NVML loaded here if it can be, and the CUDA runtime's answer for `device` as
// the fallback.
DeviceReach probeDeviceReach(int rank, const std::vector<PeerInfo>& peers, const std::vector<std::string>& busIds,
                             int device);

// One island per rank from every rank's row: 1, 2, ... in order of their lowest rank. Taken in
// rank order, a rank joins the first island of its host and kernel all of whose members it
// reaches and which all reach it, else starts one; every rank computes the same ids.
std::vector<uint64_t> deviceIslands(const std::vector<PeerInfo>& peers, const std::vector<std::vector<uint8_t>>& rows);

// "{0,1} {2,3}": the islands of the ranks of `rank`'s host, for the log.
std::string islandsOfHost(int rank, const std::vector<PeerInfo>& peers, const std::vector<uint64_t>& islands);

}  // namespace transport
}  // namespace coll
