// The socket transport's variables (docs/env.md): its FIFOs' depth, encryption, the interface,
// the sockets per peer and their buffers. Its entry in the transport table names these
// functions, so that the core reads and compares them without naming them.
#pragma once

#include <vector>

#include "transport/transport_settings.h"

namespace coll {
namespace transport {

void readNetSettings(TransportSettings* settings);
void shareNetSettings(const TransportSettings& settings, std::vector<SharedSetting>* shared);

}  // namespace transport
}  // namespace coll
