#include "transport/transport_settings.h"

#include "transport/transport_table.h"

namespace coll {
namespace transport {

TransportSettings transportSettingsFromEnvironment() {
  TransportSettings settings;
  // Every transport's, enabled or not: a bad value is refused whatever COLL_TRANSPORTS says.
  for (const TransportEntry& t : transportTable())
    if (t.readSettings != nullptr) t.readSettings(&settings);
  return settings;
}

std::vector<SharedSetting> sharedTransportSettings(const TransportSettings& settings) {
  std::vector<SharedSetting> shared;
  for (const TransportEntry& t : transportTable())
    if (t.shareSettings != nullptr) t.shareSettings(settings, &shared);
  return shared;
}

}  // namespace transport
}  // namespace coll
