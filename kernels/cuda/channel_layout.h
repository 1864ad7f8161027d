// Where things are in the device memory of one connection (sender -> receiver). The region lives
// in the receiver's memory: the sender writes data and ready marks into it, the receiver reads
// the data locally and clears the marks. transport/p2p allocates and shares the regions; kernels
// address them with these offsets. Plain C++ (no CUDA header), so the host computes the same.
//
//   [Simple ready flags: lanes x 128 B, `depth` words each][LL credits: 128 B][direct line: 128 B]
//   [Simple slots][LL slots]
//
// Each lane's flags sit on their own 128-byte line: only that lane's two blocks (sender and
// receiver) touch it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/device_step.h"

namespace coll {
namespace device {

constexpr size_t kFlagLineBytes = 128;
constexpr size_t kMaxDepth = kFlagLineBytes / sizeof(uint32_t);
static_assert(kSimpleGeometry.depth <= kMaxDepth && kLLGeometry.depth <= kMaxDepth, "a lane's flags fit one line");
static_assert(kSimpleGeometry.slotBytes % 256 == 0 && kLLGeometry.slotBytes % 256 == 0, "slots stay aligned");

COLL_HOST_DEVICE size_t simpleFlagOffset(uint32_t lane, uint32_t slot) {
  return lane * kFlagLineBytes + slot * sizeof(uint32_t);
}
COLL_HOST_DEVICE size_t llCreditOffset(uint32_t slot) {
  return kSimpleGeometry.lanes * kFlagLineBytes + slot * sizeof(uint32_t);
}
// The direct all-reduce's line (direct_kernel.cuh): the sender publishes the call's buffers and
// marks its blocks done here; the receiver polls it in its own memory. In the region a rank has
// for itself, `epoch` counts the direct calls this rank has completed.
constexpr uint32_t kDirectMaxBlocks = 16;
// The direct kernel's blocks per rank: no more than the Simple lanes, which is what the P2P
// transport checks fits on the GPU for every rank at once.
constexpr uint32_t kDirectBlocks = kSimpleGeometry.lanes < kDirectMaxBlocks ? kSimpleGeometry.lanes : kDirectMaxBlocks;
struct DirectLine {
  uint32_t published;  // the epoch of the call whose buffers follow
  uint32_t epoch;      // own region only: direct calls completed
  uint64_t send;       // the sender's buffers for that call (valid in this process)
  uint64_t recv;
  uint32_t done[kDirectMaxBlocks];  // per block of the sender: the epoch it finished
};
static_assert(sizeof(DirectLine) <= kFlagLineBytes, "the direct line fits one line");
COLL_HOST_DEVICE size_t directLineOffset() { return (kSimpleGeometry.lanes + 1) * kFlagLineBytes; }
COLL_HOST_DEVICE size_t simpleDataBase() { return (kSimpleGeometry.lanes + 2) * kFlagLineBytes; }
// A Simple slot from the start of the slots, wherever they are (PeerChannels::recvSlots).
COLL_HOST_DEVICE size_t simpleSlotInSlots(uint32_t lane, uint32_t slot) {
  return (size_t(lane) * kSimpleGeometry.depth + slot) * kSimpleGeometry.slotBytes;
}
COLL_HOST_DEVICE size_t simpleSlotOffset(uint32_t lane, uint32_t slot) {
  return simpleDataBase() + simpleSlotInSlots(lane, slot);
}
COLL_HOST_DEVICE size_t llSlotBytesInMemory() { return kLLGeometry.slotBytes / kLLDataPerLine * kLLBytesPerLine; }
COLL_HOST_DEVICE size_t llDataBase() {
  return simpleDataBase() + size_t(kSimpleGeometry.lanes) * kSimpleGeometry.depth * kSimpleGeometry.slotBytes;
}
COLL_HOST_DEVICE size_t llSlotOffset(uint32_t slot) { return llDataBase() + slot * llSlotBytesInMemory(); }
// Bytes of one connection's region (a multiple of 256).
COLL_HOST_DEVICE size_t connectionBytes() { return llDataBase() + kLLGeometry.depth * llSlotBytesInMemory(); }

// One rank's view of its connection with one peer: `recv` is the region in this rank's memory that
// the peer writes to, `send` the region in the peer's memory this rank writes to. Self is a peer
// too (send/recv to oneself). `recvSlots` is where the Simple slots of `recv` are read from: in
// the region itself (recv + simpleDataBase()) except where the staged transport copies what
// arrived into device memory apart from its flags (copy-then-reduce, transport/staged).
struct PeerChannels {
  char* recv;
  char* send;
  char* recvSlots;
};
// The channels of a region cut as above: the slots in the region itself.
COLL_HOST_DEVICE PeerChannels regionChannels(char* recv, char* send) {
  return PeerChannels{recv, send, recv + simpleDataBase()};
}

// Errors a kernel reports to the host (in host-mapped memory, read by collCommGetAsyncError).
enum DeviceError : uint32_t { kDeviceOk = 0, kDeviceTimeout = 1, kDeviceAborted = 2 };
struct DeviceStatus {
  uint32_t error;  // DeviceError; the first error wins
  uint32_t peer;   // the peer a timed-out wait was waiting for
  uint32_t step;   // the step (within its launch) that was waiting
  uint32_t abort;  // set by the host: kernels stop at their next wait
};

}  // namespace device
}  // namespace coll
