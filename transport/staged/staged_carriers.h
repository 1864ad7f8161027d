// Which host transports carry the staged transport's slices. For every pair of ranks whose device
// memory goes through staging, the host transport that connects them for host memory carries it
// (sockets between hosts, verbs where selected, shared memory inside a host where GPUs cannot reach
// each other): the same choice every rank makes from the same table, settings and descriptions.
// So every rank creates the same carrier domains, in the same order, and their setup rounds line
// up inside the staged domain's.
#pragma once

#include <string>
#include <vector>

#include "transport/routes.h"

namespace coll {
namespace transport {

struct StagedCarrier {
  const TransportEntry* entry = nullptr;
  std::vector<int> members;  // this rank's staged peers that this host transport reaches, ascending
};

// In table order; a carrier some other pair uses is listed with no members here. `spec` is
// COLL_TRANSPORTS. A rank's staging to itself needs no carrier.
std::vector<StagedCarrier> stagedCarriers(const std::vector<PeerInfo>& peers, int rank, const std::string& spec);

// Whether `entry` is the staged transport's.
bool isStagedEntry(const TransportEntry* entry);

}  // namespace transport
}  // namespace coll
