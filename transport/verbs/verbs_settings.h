// The verbs transport's variables (docs/env.md), and what a rank tells the others about it at
// init. Its entry in the transport table names these functions, so that the core reads them
// without naming them. Built with or without rdma-core's header.
#pragma once

#include "transport/peer_info.h"
#include "transport/transport_settings.h"

namespace coll {
namespace transport {

void readVerbsSettings(TransportSettings* settings);
// Whether this rank found a device (PeerInfo::verbsDevice): verbs connects two ranks that both did.
void describeVerbsHere(PeerInfo* self);

}  // namespace transport
}  // namespace coll
