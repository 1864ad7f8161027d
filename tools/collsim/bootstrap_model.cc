#include "tools/collsim/bootstrap_model.h"

#include <algorithm>

#include "src/algorithms/algorithms.h"
#include "src/algorithms/cost_model.h"
#include "tools/collsim/rank_traffic.h"

namespace collsim {

BootstrapCost storeAllGather(int n) {
  BootstrapCost cost;
  cost.rounds = 1;  // every get waits only for its key; the gets go one after another
  cost.storeRequestsPerRank = static_cast<uint64_t>(n);  // one set, n-1 gets
  cost.storeRequestsTotal = static_cast<uint64_t>(n) * static_cast<uint64_t>(n);
  cost.peersPerRank = 0;
  cost.blocksReceivedPerRank = static_cast<uint64_t>(n - 1);
  return cost;
}

BootstrapCost logRoundsAllGather(int n, const std::vector<int>& ranks) {
  BootstrapCost cost;
  cost.rounds = coll::ceilLog2(n);
  const std::vector<int> order = coll::algorithms::identityOrder(n);
  for (int rank : ranks) {
    // One-byte blocks, one slot each way per round: a message is a round's transfer.
    const coll::Schedule schedule = coll::algorithms::bruckAllGather(order, rank, 1, static_cast<size_t>(n));
    const RankTraffic t = walkSchedule(rank, n, schedule, 1, static_cast<size_t>(n));
    uint64_t received = 0;
    for (const PeerTraffic& p : t.recvs) received += p.bytes;
    // Its own address set once, then the address of each rank it sends to (it connects to them).
    const uint64_t requests = 1 + t.sends.size();
    cost.messagesPerRank = std::max(cost.messagesPerRank, t.messagesSent);
    cost.storeRequestsPerRank = std::max(cost.storeRequestsPerRank, requests);
    cost.peersPerRank = std::max(cost.peersPerRank, t.distinctPeers());
    cost.blocksReceivedPerRank = std::max(cost.blocksReceivedPerRank, received);
  }
  cost.storeRequestsTotal = cost.storeRequestsPerRank * static_cast<uint64_t>(n);
  return cost;
}

}  // namespace collsim
