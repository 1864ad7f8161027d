// One unit of work for one block: a slice of a step, this lane's share of it, and what bounds its
// waits. Both protocols (simple_protocol.cuh, ll_protocol.cuh) execute units.
#pragma once

#include <cstdint>

#include "kernels/cuda/device_sync.cuh"
#include "kernels/cuda/launch.h"

namespace coll {
namespace device {

struct Unit {
  const LaunchParams* params;
  const DeviceStep* step;
  uint64_t slice;
  LaneRange range;  // this lane's elements, relative to the start of the step
  WaitBound bound;
  int* failed;  // shared by the block: set when a wait expired
};

// Address of element `elem` of a step's local source or destination (nullptr for kNone).
__device__ __forceinline__ char* localPointer(const LaunchParams& params, DeviceBuffer buffer, uint64_t offset,
                                              uint64_t elem, uint32_t elemSize) {
  switch (buffer) {
    case DeviceBuffer::kSend:
      return params.sendBuffer + (offset + elem) * elemSize;
    case DeviceBuffer::kRecv:
      return params.recvBuffer + (offset + elem) * elemSize;
    case DeviceBuffer::kAddress:
      return reinterpret_cast<char*>(offset) + elem * elemSize;
    default:
      return nullptr;
  }
}

// The slot a slice uses on a connection that carried `seq` slices before this step.
__device__ __forceinline__ uint32_t slotOf(uint32_t seq, uint64_t slice, uint32_t depth) {
  return static_cast<uint32_t>((seq + slice) % depth);
}

}  // namespace device
}  // namespace coll
