// What the planner and the algorithms may know about where a call runs: the communicator's size
// and host layout, what the transports offer (shared memory for the native algorithms, FIFO
// shape), the kind of memory and its limits, and what a hop costs. Equal on every rank, so every
// rank reaches the same plan from the same call.
#pragma once

#include <cstddef>
#include <vector>

#include "src/algorithms/algorithm_table.h"
#include "src/algorithms/schedule.h"

namespace coll {

// What one hop over a kind of link costs: a fixed latency per synchronisation (one pipeline step
// or one message) and a streaming rate.
struct LinkCost {
  double latencyUs;
  double bytesPerUs;
};

// The network a plan's inter-host hops take: what the transports routing them are (sockets, or
// verbs over RDMA).
enum class NetworkLinkKind { kSocket, kVerbs };
const char* networkLinkKindName(NetworkLinkKind kind);

// What each kind of link costs (COLL_LINK_COSTS overrides them, docs/env.md). Shared memory and
// sockets from the measurements in docs/performance.md; verbs from what a 100 Gb/s InfiniBand or
// RoCE port gives (about 3 us for a small RDMA write with its completion, about 12 GB/s): no RDMA
// device was ever measured here, so these are the fabric's nominal figures, to be overridden where
// one is. (design value)
struct LinkCosts {
  LinkCost sharedMemory{1.5, 10000.0};
  LinkCost socket{8.0, 2000.0};
  LinkCost verbs{3.0, 12000.0};
  // Device memory. p2p: between GPUs of one host (NVLink or PCIe peer access): a flag's round trip
  // between kernels and the rate of a peer-to-peer copy. staging: what device memory adds to a
  // network hop when it goes through pinned host memory (the kernels' writes and reads over PCIe,
  // the proxies' hand-offs at both ends): its latency adds to the network's, and the pipelined
  // hop goes at the slower of the two rates (stagedLink). Nominal figures (an H100's PCIe 5 and
  // NVLink 4, derated) until a GPU run measures them: docs/cuda.md says how.
  LinkCost p2p{2.0, 100000.0};
  LinkCost staging{6.0, 20000.0};
};

struct PlanContext {
  int nranks = 1;
  bool deviceMemory = false;         // the call's buffers are in GPU memory (the device engine runs it)
  int maxStepPeers = kMaxStepPeers;  // peers one step may send to or receive from (host 16, device fewer)
  bool oneshotAvailable = false;     // every rank on this host, sharing memory
  bool directReadAvailable = false;  // and each may read the others' memory (cross-memory attach)
  size_t directReadBytes = 0;        // per-rank input from which direct reads win (0: never)
  bool ranksOutnumberCores = false;  // this host runs more ranks than it has cores
  size_t oneshotBytes = 0;           // capacity of one one-shot buffer
  size_t slotBytes = 0;              // transport slot size
  int fifoDepth = 2;                 // the shallowest FIFO any route has
  const Algo* overrides = nullptr;   // per CollType, from COLL_ALGO
  // Per CollType: the override came from an algorithm named alone, and applies only where it can
  // run (nullptr: every override is strict).
  const bool* overridesWhereRunnable = nullptr;
  // Ranks that share memory, host by host (hierarchy.cc's HostLayout); empty means one group of
  // nranks. ringOrder visits them host by host. Equal on every rank.
  std::vector<std::vector<int>> hosts;
  std::vector<int> ringOrder;
  bool crossesNetwork = false;  // some pair of ranks talks over the network
  int treeNetLevels = 0;        // levels of the binomial tree (rooted at rank 0) with an edge over the network
  LinkCost localLink{1.5, 10000.0};
  LinkCost networkLink{8.0, 2000.0};  // the inter-host hops' link (describeNetworkLink)
  NetworkLinkKind networkLinkKind = NetworkLinkKind::kSocket;
};

struct Plan {
  Algo algo = Algo::kRing;
  // When not kAuto, an equally valid plan whose speed depends on the machine's state: the caller
  // picks between the two by measurement (tuner.h).
  Algo alternative = Algo::kAuto;
  size_t maxStepElems = 0;
};

}  // namespace coll
