// How ranks exchange small records among themselves while a call is being enqueued: every rank
// gives its own (all of one size) and gets every rank's, in rank order (an all-gather through
// host memory, which the communicator provides). The device channels of rank processes that map
// each other's call buffers describe those buffers this way (DeviceChannels::mapCallBuffers).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace coll {
namespace transport {

using ExchangeRecords = std::function<std::vector<std::vector<uint8_t>>(const std::vector<uint8_t>& mine)>;

}  // namespace transport
}  // namespace coll
