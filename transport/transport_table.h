// Which transports this build has, and how the communicator picks one per pair of ranks: a table
// of entries with named fields, filtered by COLL_TRANSPORTS and by each entry's canConnect,
// highest priority first (routes.h). Adding a transport means a folder under transport/ and one
// entry here (transport/README.md says how).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/domain.h"

namespace coll {
namespace transport {

// How the planner's cost model prices a hop through a transport (src/algorithms/plan_context.h,
// LinkCosts): between ranks that share memory, across a network over sockets, or over RDMA.
enum class LinkKind { kLocal, kNetwork, kVerbs };

struct TransportEntry {
  const char* name;  // in COLL_TRANSPORTS, logs and colltopo
  int priority;      // higher wins when several can connect a pair
  MemoryKind memory;
  LinkKind link;
  // Whether the transport can connect `self` to `peer`. It may look at where the two run (host,
  // machine, kernel) and whether they are one rank, not at which ranks they are: routes are
  // decided per group of ranks that run in one place.
  bool (*canConnect)(const PeerInfo& self, const PeerInfo& peer);
  std::unique_ptr<Domain> (*create)(const DomainArgs& args);
  // COLL_TRANSPORTS may switch it off. "self" may not: it carries every rank's sends to itself.
  bool optional;
  // Off unless COLL_TRANSPORTS is set and selects it ("verbs", "^shm,net"): a transport still being
  // proven changes nothing for anyone who did not ask for it.
  bool optIn = false;
};

const std::vector<TransportEntry>& transportTable();
// "self, shm, net, p2p": the names in the table, for messages.
std::string transportNames();

// COLL_TRANSPORTS: empty for all, "shm,net" for those named, "^shm" for all but those named.
// Throws CollError(collInvalidUsage) for a name no transport has.
void validateTransportSpec(const std::string& spec);
bool transportEnabled(const std::string& spec, const TransportEntry& entry);
// Whether COLL_TRANSPORTS enables verbs, so that a rank looks for a device (PeerInfo::verbsDevice).
bool verbsRequested(const std::string& spec);

}  // namespace transport
}  // namespace coll
