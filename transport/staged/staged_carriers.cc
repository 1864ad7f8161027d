#include "transport/staged/staged_carriers.h"

#include <algorithm>
#include <cstring>

namespace coll {
namespace transport {

bool isStagedEntry(const TransportEntry* entry) { return entry != nullptr && std::strcmp(entry->name, "staged") == 0; }

std::vector<StagedCarrier> stagedCarriers(const std::vector<PeerInfo>& peers, int rank, const std::string& spec) {
  const int n = static_cast<int>(peers.size());
  // Routes depend only on where ranks run: one rank of each place speaks for all of it.
  std::vector<int> speakers;
  for (int r = 0; r < n; ++r) {
    bool seen = false;
    for (int s : speakers)
      seen = seen || (peers[s].hostHash == peers[r].hostHash && peers[s].machineHash == peers[r].machineHash &&
                      peers[s].kernelHash == peers[r].kernelHash);
    if (!seen) speakers.push_back(r);
  }
  std::vector<const TransportEntry*> used;
  for (int s : speakers) {
    const Routes device = chooseRoutes(peers, s, spec, MemoryKind::kDevice);
    const Routes host = chooseRoutes(peers, s, spec, MemoryKind::kHost);
    for (int q = 0; q < n; ++q)
      if (q != s && isStagedEntry(device.toRank[q]) &&
          std::find(used.begin(), used.end(), host.toRank[q]) == used.end())
        used.push_back(host.toRank[q]);
  }
  std::sort(used.begin(), used.end());  // the table is a vector: address order is table order
  const Routes device = chooseRoutes(peers, rank, spec, MemoryKind::kDevice);
  const Routes host = chooseRoutes(peers, rank, spec, MemoryKind::kHost);
  std::vector<StagedCarrier> carriers;
  for (const TransportEntry* entry : used) {
    StagedCarrier carrier{entry, {}};
    for (int q = 0; q < n; ++q)
      if (q != rank && isStagedEntry(device.toRank[q]) && host.toRank[q] == entry) carrier.members.push_back(q);
    carriers.push_back(carrier);
  }
  return carriers;
}

}  // namespace transport
}  // namespace coll
