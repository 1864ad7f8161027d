// A device call, planned and lowered: the same planner and schedules as host calls, with the
// transport geometry of the device protocol, turned into DeviceSteps (kernels/cuda/device_step.h)
// and cut into launches. Pure host code with no CUDA: tests/cuda_host checks every collective's
// lowering and simulates every rank's unit order to show it cannot deadlock.
//
// Two modes (docs/cuda.md):
//   - concurrent: the ranks' kernels run at the same time (threads of one process, one context),
//     so one launch carries up to kMaxLaunchSteps steps and its blocks wait for peers' flags;
//   - serialized: kernels of different processes time-slice, so no kernel may wait for another
//     process's kernel. Every unit (one slice of one step) is its own launch, and the stream waits
//     for the unit's slots (CUDA stream memory operations) before the launch, so the kernel finds
//     everything ready when it starts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/device_step.h"
#include "src/algorithms/plan_context.h"
#include "src/algorithms/schedule.h"
#include "src/coll_call.h"
#include "src/params.h"

namespace coll {

enum class DeviceMode : uint8_t { kConcurrent, kSerialized };

// Where device memory moves, for the planner: the groups of ranks whose GPUs reach each other
// (peer access), and the cost rows of a hop inside a group and of one between groups (device memory
// staged through pinned host memory over the network: describeDeviceLinks).
struct DeviceLayout {
  bool staged = false;                  // some pair of ranks is staged through host memory
  std::vector<std::vector<int>> hosts;  // ascending groups in order of their lowest rank; empty: one
  LinkCost localLink{2.0, 100000.0};
  bool localLinkOfGpus = false;  // localLink is the slowest link among the ranks' GPUs (device_links.h)
  LinkCost networkLink{16.0, 2000.0};
  std::string networkLinkName;  // the host network's name in COLL_LINK_COSTS
};

struct DeviceProgram {
  device::Protocol protocol = device::Protocol::kSimple;
  device::ChannelGeometry geometry = device::kSimpleGeometry;  // how the connections are cut
  std::string algorithm;
  size_t elemSize = 1;
  int avgDivisor = 0;  // nranks for collAvg, else 0
  // The direct all-reduce (kernels/cuda/direct_kernel.cuh) of `count` elements instead of steps:
  // one launch, no slots.
  bool direct = false;
  uint64_t count = 0;
  std::vector<device::DeviceStep> steps;
  std::vector<device::DeviceLaunch> launches;  // in stream order
};

struct LoweringInput {
  int nranks = 1;
  size_t elemSize = 1;
  device::ChannelGeometry geometry = device::kSimpleGeometry;  // its protocol is the program's
  DeviceMode mode = DeviceMode::kConcurrent;
  int avgDivisor = 0;
  // The call's buffers, to find steps that touch local data an earlier step wrote with another
  // split among lanes (they get kStepBarrierBefore). Only their addresses are used.
  const void* sendbuff = nullptr;
  const void* recvbuff = nullptr;
};

// Lowers one rank's schedule. Throws collInvalidUsage for what the device path cannot run: a step
// with more than kMaxDevicePeers peers, or (concurrent mode) a batch of more than kMaxLaunchSteps
// steps.
DeviceProgram lowerSchedule(const Schedule& schedule, const LoweringInput& input);

struct DeviceCallContext {
  int rank = 0;
  int nranks = 1;
  DeviceMode mode = DeviceMode::kConcurrent;
  ProtoChoice forced = ProtoChoice::kAuto;  // COLL_PROTO
  const Algo* overrides = nullptr;          // COLL_ALGO, per CollType
  const bool* overridesWhereRunnable = nullptr;  // COLL_ALGO named the algorithm alone (PlanContext)
  // Every rank a thread of this process on this GPU (transport::DeviceChannels::
  // sharedAddressSpace): what the direct all-reduce needs, with concurrent kernels.
  bool sharedAddressSpace = false;
  // Rank processes on one GPU under MPS whose call buffers the channels map for each other
  // (transport::DeviceChannels::mapsCallBuffers): the direct all-reduce runs there too, when forced.
  bool callBuffersMapped = false;
  // The call's stream is capturing a CUDA graph. Mapped call buffers are not for a graph: their
  // mappings are made per call, and a replay would use addresses the cache may have closed since.
  bool capturing = false;
  // The geometry of each protocol: the build's (device::geometryOf). Tests pass smaller ones so
  // that small counts span many slices and steps; the launcher accepts only the build's.
  device::ChannelGeometry (*geometryOf)(device::Protocol) = &device::geometryOf;
  // Some peer is reached through staging in pinned host memory, whose proxies
  // move Simple slots: every call takes Simple, as serialized mode does.
  bool staged = false;
  // Two levels (deviceLayout): the ranks that share device memory through peer access, host by host, and
  // what a hop costs inside a host and between hosts. Empty: every rank on one host, as before.
  DeviceLayout layout;
};

// Chooses the protocol, plans the call with that protocol's slot geometry (one slice is a FIFO
// slot to the planner) and builds this rank's schedule; *geometry receives the geometry.
Schedule planDeviceSchedule(const CollCall& call, const DeviceCallContext& context, device::ChannelGeometry* geometry);
// The smallest all-reduce the planner gives the direct kernel unasked. Measured on an H200 at 4
// and 8 thread ranks (docs/performance.md, "Device memory on one H200"): from 128 B up the direct
// kernel is ahead, by most at the largest sizes; at 8 B the ring's LL protocol answers sooner,
// the direct kernel's entry and exit meetings costing more than LL's one flag per line.
constexpr size_t kDirectAllReduceSmallestBytes = 128;

// planDeviceSchedule, then lowerSchedule; or the direct all-reduce (directAllReduceChosen).
DeviceProgram planDeviceCall(const CollCall& call, const DeviceCallContext& context);
// Whether the direct all-reduce can run this call: an all-reduce (reducesIntoEveryRank, from the
// collective's row) on 2..kMaxDevicePeers ranks that share one address space, or whose call
// buffers the channels map (callBuffersMapped), and run their kernels together.
bool directAllReduceRuns(const CollCall& call, const DeviceCallContext& context);
// Whether planDeviceCall gives this call to the direct all-reduce: where it runs, and COLL_ALGO
// asks for cma (allreduce:cma), or nothing is forced (no COLL_ALGO for all-reduce, no COLL_PROTO),
// the ranks share an address space and the call has kDirectAllReduceSmallestBytes or more. Rank
// processes take it only when forced: each call exchanges their buffers through host memory first,
// a cost no GPU has measured yet.
bool directAllReduceChosen(const CollCall& call, const DeviceCallContext& context);
// Sends and receives issued together (a group), as byte transfers that all progress together.
DeviceProgram planDevicePointToPoint(const std::vector<CollCall>& calls, const DeviceCallContext& context);

}  // namespace coll
