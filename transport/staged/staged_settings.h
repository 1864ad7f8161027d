// The staged transport's variable (docs/env.md): where the kernels read what arrived. Its entry
// in the transport table names this function, so that the core reads it without naming it.
#pragma once

#include "transport/transport_settings.h"

namespace coll {
namespace transport {

void readStagedSettings(TransportSettings* settings);

}  // namespace transport
}  // namespace coll
