// The shared-memory transport's variables (docs/env.md): its FIFOs' depth, the slot size every
// host FIFO uses, the single-copy window and named segments. Its entry in the transport table
// names these functions, so that the core reads and compares them without naming them.
#pragma once

#include <vector>

#include "transport/transport_settings.h"

namespace coll {
namespace transport {

void readShmSettings(TransportSettings* settings);
void shareShmSettings(const TransportSettings& settings, std::vector<SharedSetting>* shared);

}  // namespace transport
}  // namespace coll
