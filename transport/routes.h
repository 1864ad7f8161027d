// Routes: which transport carries this rank's traffic to each rank, for one kind of memory.
// Every rank computes them from the same table, settings and peer descriptions, so both ends of
// every pair agree, and all ranks agree on which transports anyone uses (each of those is set up
// on every rank, since setup is collective) and on which ranks share memory.
#pragma once

#include <string>
#include <vector>

#include "transport/transport_table.h"

namespace coll {
namespace transport {

struct Routes {
  std::vector<const TransportEntry*> toRank;  // indexed by rank; this rank's own entry is the one to itself
  std::vector<const TransportEntry*> used;    // every entry some pair of ranks uses, in table order
  // Ranks joined by local routes (they share memory), each ascending, in order of their lowest
  // rank; a rank with no such peer is a group of its own.
  std::vector<std::vector<int>> localGroups;

  // The ranks that `entry` connects this rank to (its domain's members), ascending.
  std::vector<int> membersOf(const TransportEntry* entry) const;
  int groupOf(int rank) const;
};

// Throws CollError(collInvalidUsage) when no enabled transport connects some pair, naming it.
Routes chooseRoutes(const std::vector<PeerInfo>& peers, int rank, const std::string& spec, MemoryKind memory);

}  // namespace transport
}  // namespace coll
