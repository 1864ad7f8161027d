// Which transports this build has, and how the communicator picks one per pair of ranks: a table
// of entries with named fields, filtered by COLL_TRANSPORTS and by each entry's canConnect,
// highest priority first (routes.h). Adding a transport means a folder under transport/ and one
// entry here (transport/README.md says how).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/domain.h"
#include "transport/transport_settings.h"

namespace coll {
namespace transport {

// Where a transport's hops go, for the planner's cost model (src/algorithms/plan_context.h,
// LinkCosts): between ranks that share memory, or across a network.
enum class LinkKind { kLocal, kNetwork };

// What a hop through a transport costs the planner unless COLL_LINK_COSTS says otherwise, under the
// name COLL_LINK_COSTS gives it: a fixed latency per synchronisation and a streaming rate. An entry
// without a name is priced as another of its memory and link kind (pricedEntry).
struct LinkPrice {
  const char* name = nullptr;
  double latencyUs = 0;
  double bytesPerUs = 0;
};

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
  // Reads the transport's own COLL_* variables into the settings, refusing a bad value naming the
  // variable (transport_settings.h); null for a transport that has none.
  void (*readSettings)(TransportSettings* settings) = nullptr;
  // Appends those of its settings that every rank must share for its connections to work.
  void (*shareSettings)(const TransportSettings& settings, std::vector<SharedSetting>* shared) = nullptr;
  // Adds to what this rank tells the others at init (PeerInfo) what its canConnect needs, where
  // COLL_TRANSPORTS enables it.
  void (*describeLocal)(PeerInfo* self) = nullptr;
  LinkPrice price{};
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
// This rank's description (describeLocalRank) with what each transport COLL_TRANSPORTS enables
// adds to it (TransportEntry::describeLocal).
PeerInfo describeLocalTransports(int rank, const std::string& hostId, const std::string& spec);

// The entries that price their hops (price.name set): host memory's, then device memory's, each
// in table order. COLL_LINK_COSTS's names are listed, and its values digested, in this order.
std::vector<const TransportEntry*> pricedEntries();
// The entry whose price a hop of `memory` over `link` costs, equal on every rank: of the priced
// entries of that kind that `used` (the routes' transports) holds, the one of highest priority,
// which routes prefer wherever it connects a pair; where `used` holds none, the highest-priority
// priced entry of that kind in the table.
const TransportEntry& pricedEntry(MemoryKind memory, LinkKind link,
                                  const std::vector<const TransportEntry*>& used = {});

}  // namespace transport
}  // namespace coll
