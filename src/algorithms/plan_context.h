// What the planner and the algorithms may know about where a call runs: the communicator's size
// and host layout, what the transports offer (shared memory for the native algorithms, FIFO
// shape), the kind of memory and its limits, and what a hop costs. Equal on every rank, so every
// rank reaches the same plan from the same call.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "src/algorithms/algorithm_table.h"
#include "src/algorithms/schedule.h"

namespace coll {
namespace transport {
enum class MemoryKind;
enum class LinkKind;
struct TransportEntry;
}  // namespace transport

// What one hop over a kind of link costs: a fixed latency per synchronisation (one pipeline step
// or one message) and a streaming rate.
struct LinkCost {
  double latencyUs;
  double bytesPerUs;
};

// What a hop over each transport's link costs: the transport table's prices (LinkPrice in
// transport/transport_table.h, which says where each figure comes from), under the names
// COLL_LINK_COSTS gives them, which overrides them (docs/env.md).
struct LinkCosts {
  struct Named {
    std::string name;
    LinkCost cost;
  };
  // transport::pricedEntries()'s order, which COLL_LINK_COSTS's messages and digest follow.
  std::vector<Named> links;

  LinkCosts();  // the table's prices
  // nullptr for a name no link has.
  LinkCost* find(const std::string& name);
  // Throws CollError(collInternalError) for a name no link has.
  const LinkCost& of(const std::string& name) const;
  // What a hop of `memory` over `link` costs where the routes take the transports `used`
  // (transport::pricedEntry says which entry's price that is).
  const LinkCost& of(transport::MemoryKind memory, transport::LinkKind link,
                     const std::vector<const transport::TransportEntry*>& used = {}) const;
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
  std::string networkLinkName;        // its name in COLL_LINK_COSTS, for logs and colltopo
};

struct Plan {
  Algo algo = Algo::kRing;
  // When not kAuto, an equally valid plan whose speed depends on the machine's state: the caller
  // picks between the two by measurement (tuner.h).
  Algo alternative = Algo::kAuto;
  size_t maxStepElems = 0;
};

}  // namespace coll
