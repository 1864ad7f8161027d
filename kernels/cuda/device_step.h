// What a device kernel executes: one rank's schedule (src/algorithms/schedule.h) lowered to plain
// structs that a kernel receives by value, and the channel geometry both ends of a connection agree
// on. Host code (the lowering in src/plan/device_program.cc, its tests) and device code include this
// header; it needs no CUDA header, so it compiles with the host compiler alone.
//
// A step moves `count` elements in slices. Both ends of a connection cut a step into the same
// slices (the step counts match pairwise by construction of the schedules), and slice s of a step
// lands in slot (seq + s) % depth of the connection, where seq is the number of slices the
// connection carried earlier in the same call. Counting from zero in every call is what makes a
// call replayable from a CUDA graph: nothing in a kernel's arguments depends on earlier calls.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define COLL_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define COLL_HOST_DEVICE inline
#endif
// Unrolling hint for loops in __host__ __device__ code (the host compiler does not know the pragma).
#if defined(__CUDA_ARCH__)
#define COLL_UNROLL _Pragma("unroll")
#else
#define COLL_UNROLL
#endif

namespace coll {
namespace device {

// Peers of one step. The host schedules use up to 16 (binomial trees over 2^16 ranks); ranks on
// one node need far fewer, and the lowering refuses a schedule that needs more.
constexpr int kMaxDevicePeers = 8;
// Steps one launch carries in its parameters (__grid_constant__, so nothing is copied per thread).
constexpr int kMaxLaunchSteps = 48;

enum class DeviceBuffer : uint8_t { kNone = 0, kSend = 1, kRecv = 2, kAddress = 3 };

enum StepFlag : uint8_t {
  kStepFinalAvg = 1,       // collAvg: divide by the divisor when storing this step's results
  kStepJoinNext = 2,       // progresses together with the next step (its slices interleave)
  kStepBarrierBefore = 4,  // the lanes of this rank meet before this step (local data dependency)
};

struct DeviceStep {
  uint64_t count = 0;      // elements
  uint64_t srcOffset = 0;  // elements into the buffer, or the address itself for kAddress
  uint64_t dstOffset = 0;
  uint32_t recvSeq[kMaxDevicePeers] = {};  // slices each receive connection carried before this step
  uint32_t sendSeq[kMaxDevicePeers] = {};
  uint16_t recvPeers[kMaxDevicePeers] = {};
  uint16_t sendPeers[kMaxDevicePeers] = {};
  uint8_t nrecv = 0;
  uint8_t nsend = 0;
  DeviceBuffer srcBuffer = DeviceBuffer::kNone;
  DeviceBuffer dstBuffer = DeviceBuffer::kNone;
  uint8_t flags = 0;
  uint8_t reserved[3] = {};
  // The batch round in which this step moves its first slice. Steps of one batch that share a
  // connection take turns on it, the later starting when the earlier is done, so every connection
  // carries its slices in order; all other steps of a batch start in round 0.
  uint32_t firstRound = 0;
  uint32_t reserved2 = 0;
};
static_assert(sizeof(DeviceStep) == 136, "DeviceStep is a kernel parameter: keep it compact");

// A range of steps that one kernel launch runs, restricted to batch rounds [firstRound,
// roundLimit) (unit_order.h): concurrent mode runs many steps per launch, serialized mode one unit.
struct DeviceLaunch {
  uint32_t firstStep = 0;
  uint32_t nsteps = 0;
  uint64_t firstRound = 0;
  uint64_t roundLimit = UINT64_MAX;
};

// Protocols (docs/cuda.md). LL: 8-byte lines of 4 data bytes and a 4-byte flag written in one
// store, so a receiver needs no separate ready flag: lowest latency, half the bandwidth; one
// block. Simple: slots of plain data with a ready flag per slot and lane; full bandwidth.
enum class Protocol : uint8_t { kLL = 0, kSimple = 1 };

// How a connection's memory is cut, identical on every rank (constants of the build).
struct ChannelGeometry {
  Protocol protocol;
  uint32_t lanes;      // blocks of one kernel; each is an independent pipeline over its share
  uint32_t slotBytes;  // payload bytes of one lane's slot
  uint32_t depth;      // slots per lane and connection
  uint32_t threads;    // threads per block
};

constexpr uint32_t kLLBytesPerLine = 8;  // one line: 4 data bytes + 4 flag bytes
constexpr uint32_t kLLDataPerLine = 4;
// Functions rather than variables only, because device code may not refer to a host object.
COLL_HOST_DEVICE constexpr ChannelGeometry llGeometry() { return {Protocol::kLL, 1, 4096, 8, 512}; }
// The Simple geometry can be changed at build time (-DCOLL_SIMPLE_LANES=32 and so on, in every
// translation unit alike: host and device compute the same layout) to measure other shapes. The
// defaults were chosen on an H200 (docs/performance.md): 256 KiB slots move 2x the bytes per
// handshake of 64 KiB ones, and 16 lanes keep 8 ranks' kernels resident on one GPU (one block of
// 512 threads per SM), which 32 lanes do not (the ranks then fall back to serialized mode).
#ifndef COLL_SIMPLE_LANES
#define COLL_SIMPLE_LANES 16
#endif
#ifndef COLL_SIMPLE_SLOT_KIB
#define COLL_SIMPLE_SLOT_KIB 256
#endif
#ifndef COLL_SIMPLE_DEPTH
#define COLL_SIMPLE_DEPTH 8
#endif
COLL_HOST_DEVICE constexpr ChannelGeometry simpleGeometry() {
  return {Protocol::kSimple, COLL_SIMPLE_LANES, COLL_SIMPLE_SLOT_KIB * 1024, COLL_SIMPLE_DEPTH, 512};
}
constexpr ChannelGeometry kLLGeometry = llGeometry();
constexpr ChannelGeometry kSimpleGeometry = simpleGeometry();

COLL_HOST_DEVICE constexpr ChannelGeometry geometryOf(Protocol protocol) {
  return protocol == Protocol::kLL ? llGeometry() : simpleGeometry();
}

// Elements in one slice (every lane's slot together) of a call with `elemSize`-byte elements.
COLL_HOST_DEVICE uint64_t sliceElems(const ChannelGeometry& g, uint32_t elemSize) {
  return uint64_t(g.lanes) * (g.slotBytes / elemSize);
}

COLL_HOST_DEVICE bool hasPeers(const DeviceStep& s) { return s.nrecv + s.nsend > 0; }

// Slices of a step: a step with peers moves one slot per lane at a time; a local step (a copy or a
// local reduction) moves everything at once. A zero-count step moves nothing.
COLL_HOST_DEVICE uint64_t stepSlices(const DeviceStep& s, uint64_t sliceElemCount) {
  if (s.count == 0) return 0;
  if (!hasPeers(s)) return 1;
  return (s.count + sliceElemCount - 1) / sliceElemCount;
}

// The elements [begin, end) of a step that lane `lane` moves in slice `slice`, relative to the
// start of the step. Lanes take consecutive shares rounded to 16 bytes, so every share starts
// 16-byte aligned in its slot and no share exceeds a slot.
struct LaneRange {
  uint64_t begin;
  uint64_t end;
};
COLL_HOST_DEVICE LaneRange laneRange(const DeviceStep& s, uint64_t slice, uint64_t sliceElemCount, uint32_t lanes,
                                     uint32_t lane, uint32_t elemSize) {
  const uint64_t first = hasPeers(s) ? slice * sliceElemCount : 0;
  uint64_t last = hasPeers(s) ? first + sliceElemCount : s.count;
  if (last > s.count) last = s.count;
  const uint64_t elems = last - first;
  const uint64_t grain = elemSize >= 16 ? 1 : 16 / elemSize;
  uint64_t share = (elems + lanes - 1) / lanes;
  share = (share + grain - 1) / grain * grain;
  uint64_t begin = first + share * lane;
  uint64_t end = begin + share;
  if (begin > last) begin = last;
  if (end > last) end = last;
  return {begin, end};
}

}  // namespace device
}  // namespace coll
