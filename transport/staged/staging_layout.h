// Where the proxy finds a lane's ready flag and slot in a staged region: the Simple part of the
// kernels' channel layout (kernels/cuda/channel_layout.h), for any geometry. With the build's
// Simple geometry the offsets are channel_layout.h's exactly (tests/staged checks it), so that the
// kernels read and write a staged region as they do a peer's GPU memory; the host tests use small
// geometries so that small counts span many slices.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/channel_layout.h"

namespace coll {
namespace transport {

struct StagingLayout {
  device::ChannelGeometry geometry;
  size_t flagOffset(uint32_t lane, uint32_t slot) const {
    return lane * device::kFlagLineBytes + slot * sizeof(uint32_t);
  }
  // After the lanes' flag lines, the LL credits' line and the direct line, as channel_layout.h.
  size_t dataBase() const { return (geometry.lanes + 2) * device::kFlagLineBytes; }
  // A slot from the start of the slots, wherever they are (device::PeerChannels::recvSlots).
  size_t slotInSlots(uint32_t lane, uint32_t slot) const {
    return (size_t(lane) * geometry.depth + slot) * geometry.slotBytes;
  }
  size_t slotOffset(uint32_t lane, uint32_t slot) const { return dataBase() + slotInSlots(lane, slot); }
  // Every lane's slots, apart from their flags.
  size_t slotsBytes() const { return slotInSlots(geometry.lanes, 0); }
  // The kernels' channels to a peer whose regions these are: slots inside the regions.
  device::PeerChannels channels(char* recv, char* send) const { return {recv, send, recv + dataBase()}; }
  // A whole connection's region: channel_layout.h's size for the build's geometry (a kernel may
  // address any part of it), just the Simple slots for others.
  size_t regionBytes() const {
    const device::ChannelGeometry& b = device::kSimpleGeometry;
    const bool built = geometry.lanes == b.lanes && geometry.slotBytes == b.slotBytes && geometry.depth == b.depth;
    return built ? device::connectionBytes() : slotOffset(geometry.lanes, 0);
  }
};

}  // namespace transport
}  // namespace coll
