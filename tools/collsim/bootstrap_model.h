// The bootstrap's all-gather at scale: what each rank and the rendezvous store do to give every
// rank every other rank's blob (its address card), the exchange that init runs once for the peer
// descriptions and once per transport setup round.
//
// - Store-based (bootstrap::allGather today): every rank sets its key and gets every other
//   rank's from the one store: n requests per rank, n^2 at the store.
// - Between ranks in O(log n) rounds (what issue 18 replaces it with): every rank sets only its
//   own address in the store, reads the addresses of the ranks it sends to, and the blobs travel
//   rank to rank in Bruck's pattern. Modelled with the library's own Bruck all-gather schedule
//   (src/algorithms/bruck.cc) on one-byte blocks, walked like any other schedule, so its peers
//   and messages are counted, not assumed.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/collsim/job_model.h"

namespace collsim {

struct BootstrapCost {
  int rounds = 0;                // sequential exchanges a rank waits through
  uint64_t messagesPerRank = 0;  // rank-to-rank messages a rank sends (0 for the store)
  uint64_t storeRequestsPerRank = 0;
  uint64_t storeRequestsTotal = 0;     // what the one store serves
  int peersPerRank = 0;                // ranks a rank exchanges with directly
  uint64_t blocksReceivedPerRank = 0;  // other ranks' blobs that arrive at a rank (n-1 either way)
};

BootstrapCost storeAllGather(int nranks);
// Walks the Bruck schedule of every rank in `ranks` (the worst of them is reported).
BootstrapCost logRoundsAllGather(int nranks, const std::vector<int>& ranks);

}  // namespace collsim
