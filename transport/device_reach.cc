#include "transport/device_reach.h"

#include <algorithm>
#include <map>

#include "common/cuda_device.h"

namespace coll {
namespace transport {

DeviceReach probeDeviceReach(int rank, const std::vector<PeerInfo>& peers, const std::vector<std::string>& busIds,
                             const topo::NvmlApi* nvml, const std::string& nvmlWhy, const PeerAccessProbe& fallback) {
  const int n = static_cast<int>(peers.size());
  DeviceReach reach;
  reach.row.assign(n, 0);
  // This host's GPUs, each once, in the order of the first rank on it.
  std::vector<std::string> gpus;
  std::map<std::string, size_t> indexOf;
  for (int r = 0; r < n; ++r)
    if (onOneHostAndKernel(peers[rank], peers[r]) && !busIds[r].empty() && indexOf.count(busIds[r]) == 0) {
      indexOf[busIds[r]] = gpus.size();
      gpus.push_back(busIds[r]);
    }
  reach.topology = topo::describeGpus(gpus, nvml, nvmlWhy);
  const std::string& mine = busIds[rank];
  for (int r = 0; r < n; ++r) {
    if (!onOneHostAndKernel(peers[rank], peers[r])) continue;
    const std::string& theirs = busIds[r];
    if (mine.empty() || theirs.empty() || mine == theirs) {
      reach.row[r] = 1;
      continue;
    }
    const topo::GpuLink& link = reach.topology.links[indexOf[mine]][indexOf[theirs]];
    reach.row[r] = link.kind != topo::GpuLinkKind::kUnknown ? link.peerAccess : fallback(mine, theirs);
  }
  return reach;
}

DeviceReach probeDeviceReach(int rank, const std::vector<PeerInfo>& peers, const std::vector<std::string>& busIds,
                             int device) {
  topo::NvmlApi api;
  std::string why;
  const bool loaded = topo::loadNvml(&api, &why);
  return probeDeviceReach(rank, peers, busIds, loaded ? &api : nullptr, why,
                          [device](const std::string&, const std::string& theirs) {
                            return cudaCanAccessPeerByBusId(device, theirs);
                          });
}

std::vector<uint64_t> deviceIslands(const std::vector<PeerInfo>& peers, const std::vector<std::vector<uint8_t>>& rows) {
  const int n = static_cast<int>(peers.size());
  auto reaches = [&](int a, int b) { return rows[a].size() > size_t(b) && rows[a][b] != 0; };
  std::vector<std::vector<int>> islands;
  std::vector<uint64_t> idOf(n, 0);
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < islands.size() && idOf[r] == 0; ++i) {
      const std::vector<int>& members = islands[i];
      const bool joins = std::all_of(members.begin(), members.end(), [&](int m) {
        return onOneHostAndKernel(peers[m], peers[r]) && reaches(m, r) && reaches(r, m);
      });
      if (joins) {
        islands[i].push_back(r);
        idOf[r] = i + 1;
      }
    }
    if (idOf[r] == 0) {
      islands.push_back({r});
      idOf[r] = islands.size();
    }
  }
  return idOf;
}

std::string islandsOfHost(int rank, const std::vector<PeerInfo>& peers, const std::vector<uint64_t>& islands) {
  std::map<uint64_t, std::string> members;
  for (size_t r = 0; r < peers.size(); ++r) {
    if (!onOneHostAndKernel(peers[rank], peers[r])) continue;
    std::string& text = members[islands[r]];
    text += (text.empty() ? "" : ",") + std::to_string(r);
  }
  std::string text;
  for (const auto& island : members) text += (text.empty() ? "{" : " {") + island.second + "}";
  return text;
}

}  // namespace transport
}  // namespace coll
