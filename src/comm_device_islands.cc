// Which ranks of a host share device memory directly, at the first call with a stream
// (transport/device_reach.h): every rank's GPU and every rank's answers go through the store, so
// that all ranks compute the same islands, which the device routes then read from the peer
// descriptions. Ranks on one GPU, or on GPUs that map each other's memory, form one island;
// other pairs of a host stage through host memory.
#include <algorithm>

#include "common/cuda_device.h"
#include "common/error.h"
#include "common/logging.h"
#include "src/comm.h"
#include "src/plan/device_links.h"
#include "transport/device_reach.h"

namespace coll {

std::optional<LinkCost> Communicator::placeDeviceIslands(int device) {
  const std::string busId = cudaDeviceBusId(device);
  std::vector<std::string> busIds;
  for (const bootstrap::Bytes& named :
       gatherFromRanks("device/gpus", bootstrap::Bytes(busId.begin(), busId.end()), initDeadline()))
    busIds.emplace_back(named.begin(), named.end());
  const transport::DeviceReach reach = transport::probeDeviceReach(rank_, peers_, busIds, device);
  std::vector<std::vector<uint8_t>> rows;
  for (const bootstrap::Bytes& row : gatherFromRanks("device/reach", reach.row, initDeadline()))
    rows.emplace_back(row.begin(), row.end());
  const std::vector<uint64_t> islands = transport::deviceIslands(peers_, rows);
  for (int r = 0; r < nranks_; ++r) peers_[r].deviceIsland = islands[r];
  // The GPUs of this rank's island: where more than one, a hop between them is priced at the
  // slowest link among them, as the topology gives it.
  std::vector<std::string> islandGpus;
  for (int r = 0; r < nranks_; ++r)
    if (islands[r] == islands[rank_] && !busIds[r].empty() &&
        std::find(islandGpus.begin(), islandGpus.end(), busIds[r]) == islandGpus.end())
      islandGpus.push_back(busIds[r]);
  COLL_INFO(kInit, "comm %s rank %d: GPU %s; links between this host's GPUs from %s; ranks sharing device memory "
            "directly: %s",
            options_.name.c_str(), rank_, busId.empty() ? "(bus id unknown)" : busId.c_str(),
            reach.topology.source.c_str(), transport::islandsOfHost(rank_, peers_, islands).c_str());
  std::optional<LinkCost> mine;
  if (islandGpus.size() >= 2 && reach.topology.source == "NVML")
    mine = slowestGpuLinkAmong(reach.topology, islandGpus, params_.linkCosts);
  return slowestOfEveryRank(mine);
}

std::optional<LinkCost> Communicator::slowestOfEveryRank(const std::optional<LinkCost>& mine) {
  return slowestGpuLinkPrice(gatherFromRanks("device/gpulink", encodeGpuLinkPrice(mine), initDeadline()));
}

}  // namespace coll
