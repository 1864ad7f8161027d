// Ranks described as the communicator describes them at init (transport/peer_info.h), placed on
// hosts by the test, for the route and device-island tests.
#pragma once

#include <vector>

#include "transport/peer_info.h"

namespace coll {
namespace transport {

// Ranks on hosts named by hostOf[rank] (one machine and kernel per host, as namespaces are).
inline std::vector<PeerInfo> ranksOn(const std::vector<int>& hostOf) {
  std::vector<PeerInfo> peers(hostOf.size());
  for (size_t r = 0; r < hostOf.size(); ++r) {
    peers[r].rank = static_cast<int>(r);
    peers[r].hostHash = peers[r].machineHash = peers[r].kernelHash = 1000 + hostOf[r];
    peers[r].pid = 100 + static_cast<int>(r);
  }
  return peers;
}

}  // namespace transport
}  // namespace coll
