// Which transport connects two ranks: a table of descriptors with named fields, filtered by
// COLL_TRANSPORTS and by each descriptor's canConnect, highest priority first. Today the table
// holds shared memory and sockets; IB verbs and CUDA P2P join it as entries, and the communicator
// sets up whatever the table picks per peer pair.
#pragma once

#include <string>
#include <vector>

#include "transport/transport.h"

namespace coll {
namespace transport {

struct TransportDescriptor {
  const char* name;
  int priority;  // higher wins when several can connect a pair
  bool (*canConnect)(const PeerInfo& self, const PeerInfo& peer);
};

const std::vector<TransportDescriptor>& transportTable();
// "shm, net": the names in the table, for messages.
std::string transportNames();

// COLL_TRANSPORTS: empty for all, "shm,net" for those named, "^shm" for all but those named.
// Throws CollError(collInvalidUsage) for a name no transport has.
void validateTransportSpec(const std::string& spec);
bool transportEnabled(const std::string& spec, const char* name);

// The best enabled transport between self and peer, or nullptr when none can connect them.
const TransportDescriptor* chooseTransport(const PeerInfo& self, const PeerInfo& peer, const std::string& spec);

}  // namespace transport
}  // namespace coll
