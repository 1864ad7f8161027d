#include "src/plan/device_program.h"

#include <algorithm>
#include <map>

#include "common/error.h"
#include "kernels/cuda/unit_order.h"
#include "src/algorithms/algorithms.h"
#include "src/collective_table.h"
#include "src/plan/planner.h"
#include "src/plan/protocol.h"

namespace coll {
namespace {

using device::DeviceBuffer;
using device::DeviceLaunch;
using device::DeviceStep;

DeviceBuffer deviceBufferOf(BufferId id) {
  switch (id) {
    case BufferId::kSend:
      return DeviceBuffer::kSend;
    case BufferId::kRecv:
      return DeviceBuffer::kRecv;
    case BufferId::kAddress:
      return DeviceBuffer::kAddress;
    default:
      return DeviceBuffer::kNone;
  }
}

uint64_t offsetOf(const BufferRef& ref) {
  return ref.buffer == BufferId::kAddress ? reinterpret_cast<uintptr_t>(ref.address) + ref.offset : ref.offset;
}

DeviceStep convertStep(const Step& step, const char* algorithm) {
  if (step.nrecv > device::kMaxDevicePeers || step.nsend > device::kMaxDevicePeers)
    throwError(collInvalidUsage,
               "device buffers: a step of the %s schedule exchanges with %d receive and %d send peers; the device "
               "path supports at most %d per step",
               algorithm, step.nrecv, step.nsend, device::kMaxDevicePeers);
  DeviceStep d;
  d.count = step.count;
  d.srcBuffer = deviceBufferOf(step.src.buffer);
  d.dstBuffer = deviceBufferOf(step.dst.buffer);
  d.srcOffset = offsetOf(step.src);
  d.dstOffset = offsetOf(step.dst);
  d.nrecv = static_cast<uint8_t>(step.nrecv);
  d.nsend = static_cast<uint8_t>(step.nsend);
  for (int i = 0; i < step.nrecv; ++i) d.recvPeers[i] = static_cast<uint16_t>(step.recvPeers[i]);
  for (int i = 0; i < step.nsend; ++i) d.sendPeers[i] = static_cast<uint16_t>(step.sendPeers[i]);
  if (step.finalAvg) d.flags |= device::kStepFinalAvg;
  if (step.joinNext) d.flags |= device::kStepJoinNext;
  return d;
}

// [begin, end) of every batch (steps chained by kStepJoinNext).
std::vector<std::pair<uint32_t, uint32_t>> batchesOf(const std::vector<DeviceStep>& steps) {
  std::vector<std::pair<uint32_t, uint32_t>> batches;
  uint32_t begin = 0;
  const uint32_t n = static_cast<uint32_t>(steps.size());
  while (begin < n) {
    uint32_t end = begin + 1;
    while (end < n && (steps[end - 1].flags & device::kStepJoinNext)) ++end;
    batches.emplace_back(begin, end);
    begin = end;
  }
  return batches;
}

// A device kernel walks a batch in a fixed order, blocking on each unit (unit_order.h), where the
// host executor moves whichever step is ready. That fixed order is safe for batches of
// independent transfers, each with one peer (all-to-all, gather, scatter, groups of sends and
// receives), but not for batches of steps that receive and send at once (the double binary tree's
// two trees): a rank blocked on one tree can hold up the other tree's progress on its peer. Such
// batches run step after step, which is the order in which the schedule's dependencies point.
bool isFusedStep(const DeviceStep& step) { return step.nrecv + step.nsend >= 2; }

void sequentializeFusedBatches(std::vector<DeviceStep>& steps) {
  for (auto [begin, end] : batchesOf(steps)) {
    bool fused = false;
    for (uint32_t i = begin; i < end; ++i) fused = fused || isFusedStep(steps[i]);
    if (fused)
      for (uint32_t i = begin; i < end; ++i) steps[i].flags &= ~device::kStepJoinNext;
  }
}

// Slice sequence numbers per connection (in step order, which is each connection's order), and the
// first round of every step within its batch: a step waits for the earlier steps of its batch
// that use one of its connections.
void assignSequencesAndRounds(std::vector<DeviceStep>& steps, int nranks, uint64_t sliceElemCount) {
  std::vector<uint32_t> sent(static_cast<size_t>(nranks), 0), received(static_cast<size_t>(nranks), 0);
  for (auto [begin, end] : batchesOf(steps)) {
    std::map<int, uint64_t> roundFree;  // key: peer for sends, -1 - peer for receives
    for (uint32_t i = begin; i < end; ++i) {
      DeviceStep& step = steps[i];
      const uint64_t slices = device::stepSlices(step, sliceElemCount);
      uint64_t first = 0;
      for (int k = 0; k < step.nsend; ++k) first = std::max(first, roundFree[step.sendPeers[k]]);
      for (int k = 0; k < step.nrecv; ++k) first = std::max(first, roundFree[-1 - step.recvPeers[k]]);
      step.firstRound = static_cast<uint32_t>(first);
      for (int k = 0; k < step.nsend; ++k) {
        step.sendSeq[k] = sent[step.sendPeers[k]];
        sent[step.sendPeers[k]] += static_cast<uint32_t>(slices);
        roundFree[step.sendPeers[k]] = first + slices;
      }
      for (int k = 0; k < step.nrecv; ++k) {
        step.recvSeq[k] = received[step.recvPeers[k]];
        received[step.recvPeers[k]] += static_cast<uint32_t>(slices);
        roundFree[-1 - step.recvPeers[k]] = first + slices;
      }
    }
  }
}

// A local access of a step, to decide where the lanes of one launch must meet: a lane may run
// ahead of the others, so a step that reads or overwrites local data that an earlier step wrote
// (or read) with another split among lanes must wait until every lane finished that step.
struct LocalAccess {
  uintptr_t begin, end;  // bytes
  bool write;
  uint64_t count;  // the split among lanes depends on the start, the count and whether
  bool withPeers;  // the step has peers (the slicing)
};

bool resolve(DeviceBuffer buffer, uint64_t offset, const LoweringInput& in, uintptr_t* address) {
  switch (buffer) {
    case DeviceBuffer::kSend:
      *address = reinterpret_cast<uintptr_t>(in.sendbuff) + offset * in.elemSize;
      return true;
    case DeviceBuffer::kRecv:
      *address = reinterpret_cast<uintptr_t>(in.recvbuff) + offset * in.elemSize;
      return true;
    case DeviceBuffer::kAddress:
      *address = static_cast<uintptr_t>(offset);
      return true;
    default:
      return false;
  }
}

void appendAccesses(const DeviceStep& step, const LoweringInput& in, std::vector<LocalAccess>* out) {
  uintptr_t address = 0;
  const uintptr_t bytes = step.count * in.elemSize;
  if (step.count == 0) return;
  if (resolve(step.srcBuffer, step.srcOffset, in, &address))
    out->push_back({address, address + bytes, false, step.count, device::hasPeers(step)});
  if (resolve(step.dstBuffer, step.dstOffset, in, &address))
    out->push_back({address, address + bytes, true, step.count, device::hasPeers(step)});
}

bool conflicts(const LocalAccess& a, const LocalAccess& b) {
  const bool overlap = a.begin < b.end && b.begin < a.end;
  const bool sameSplit = a.begin == b.begin && a.count == b.count && a.withPeers == b.withPeers;
  return overlap && (a.write || b.write) && !sameSplit;
}

// Concurrent mode: cuts the steps into launches at batch boundaries and marks the batches that
// need a barrier of the lanes (kernel boundaries are barriers already).
void cutConcurrentLaunches(DeviceProgram& program, const LoweringInput& in) {
  std::vector<LocalAccess> sinceBarrier;
  DeviceLaunch current;
  bool moves = false;  // whether the current launch has a unit at all (count 0 calls have none)
  auto close = [&] {
    if (current.nsteps > 0 && moves) program.launches.push_back(current);
  };
  for (auto [begin, end] : batchesOf(program.steps)) {
    const uint32_t size = end - begin;
    if (size > static_cast<uint32_t>(device::kMaxLaunchSteps))
      throwError(collInvalidUsage,
                 "device buffers: %u transfers progress together (a group, or all-to-all/gather/scatter on many "
                 "ranks); the device path supports at most %d",
                 size, device::kMaxLaunchSteps);
    if (current.nsteps + size > static_cast<uint32_t>(device::kMaxLaunchSteps)) {
      close();
      current = DeviceLaunch{begin, 0, 0, UINT64_MAX};
      moves = false;
      sinceBarrier.clear();
    }
    if (current.nsteps == 0) current.firstStep = begin;
    std::vector<LocalAccess> batch;
    for (uint32_t i = begin; i < end; ++i) {
      appendAccesses(program.steps[i], in, &batch);
      moves = moves || program.steps[i].count > 0;
    }
    bool barrier = false;
    for (const LocalAccess& a : batch)
      for (const LocalAccess& b : sinceBarrier) barrier = barrier || conflicts(a, b);
    if (barrier) {
      program.steps[begin].flags |= device::kStepBarrierBefore;
      sinceBarrier.clear();
    }
    sinceBarrier.insert(sinceBarrier.end(), batch.begin(), batch.end());
    current.nsteps += size;
  }
  close();
}

// Serialized mode: one launch per unit, in the order every rank's kernel would run them.
void cutSerializedLaunches(DeviceProgram& program, uint64_t sliceElemCount) {
  const std::vector<DeviceStep>& steps = program.steps;
  device::forEachUnit(
      steps.data(), static_cast<uint32_t>(steps.size()), sliceElemCount, 0, UINT64_MAX, [](uint32_t) {},
      [&](uint32_t index, uint64_t slice) {
        const uint64_t round = steps[index].firstRound + slice;
        program.launches.push_back(DeviceLaunch{index, 1, round, round + 1});
      });
}

}  // namespace

DeviceProgram lowerSchedule(const Schedule& schedule, const LoweringInput& in) {
  if (in.nranks < 1 || in.nranks > 65535)
    throwError(collInvalidUsage, "device buffers: %d ranks; the device path supports 1 to 65535", in.nranks);
  DeviceProgram program;
  program.protocol = in.geometry.protocol;
  program.geometry = in.geometry;
  program.algorithm = schedule.algorithm;
  program.elemSize = in.elemSize;
  program.avgDivisor = in.avgDivisor;
  for (const Step& step : schedule.steps) program.steps.push_back(convertStep(step, schedule.algorithm.c_str()));
  const uint64_t sliceElemCount = device::sliceElems(in.geometry, static_cast<uint32_t>(in.elemSize));
  sequentializeFusedBatches(program.steps);
  assignSequencesAndRounds(program.steps, in.nranks, sliceElemCount);
  if (in.mode == DeviceMode::kConcurrent) {
    cutConcurrentLaunches(program, in);
  } else {
    cutSerializedLaunches(program, sliceElemCount);
  }
  return program;
}

namespace {

PlanContext devicePlanContext(const DeviceCallContext& context, const device::ChannelGeometry& geometry) {
  PlanContext plan;
  plan.nranks = context.nranks;
  plan.slotBytes = size_t(geometry.lanes) * geometry.slotBytes;  // one slice is one FIFO slot
  plan.fifoDepth = static_cast<int>(geometry.depth);
  plan.overrides = context.overrides;
  plan.overridesWhereRunnable = context.overridesWhereRunnable;
  // The planner rules out what the device path cannot run (more peers per step than a DeviceStep
  // holds) before lowering, with COLL_ALGO's error when it was forced.
  plan.deviceMemory = true;
  plan.maxStepPeers = device::kMaxDevicePeers;
  // Two levels where some ranks' device memory is staged to others: the host-aware rows (hier,
  // dbtree, bruck, the host-ordered ring) and the models read the groups and the two links.
  if (!context.layout.hosts.empty()) {
    algorithms::describeHostLayout(plan, context.layout.hosts);
    plan.localLink = context.layout.localLink;
    plan.networkLink = context.layout.networkLink;
    plan.networkLinkName = context.layout.networkLinkName;
  } else if (context.layout.localLinkOfGpus) {
    // One group on several GPUs: every hop crosses their links.
    plan.localLink = context.layout.localLink;
  }
  return plan;
}

bool concurrentProtocols(const DeviceCallContext& context) {
  return context.mode == DeviceMode::kConcurrent && !context.staged;
}

}  // namespace

Schedule planDeviceSchedule(const CollCall& call, const DeviceCallContext& context, device::ChannelGeometry* geometry) {
  *geometry = context.geometryOf(chooseProtocol(call, context.nranks, concurrentProtocols(context), context.forced));
  const PlanContext planContext = devicePlanContext(context, *geometry);
  return buildSchedule(call, planCall(call, planContext), context.rank, planContext);
}

bool directAllReduceRuns(const CollCall& call, const DeviceCallContext& context) {
  const bool buffersReachable = context.sharedAddressSpace || (context.callBuffersMapped && !context.capturing);
  return reducesIntoEveryRank(collectiveRow(call.type)) && buffersReachable &&
         context.mode == DeviceMode::kConcurrent && context.nranks >= 2 && context.nranks <= device::kMaxDevicePeers;
}

bool directAllReduceChosen(const CollCall& call, const DeviceCallContext& context) {
  if (!directAllReduceRuns(call, context)) return false;
  const Algo forced = context.overrides != nullptr ? context.overrides[static_cast<int>(call.type)] : Algo::kAuto;
  if (forced == Algo::kDirectRead) return true;
  // Unforced: a forced protocol (COLL_PROTO) names the ring's pipelines, so it keeps them.
  return forced == Algo::kAuto && context.forced == ProtoChoice::kAuto && context.sharedAddressSpace &&
         call.count * call.elemSize >= kDirectAllReduceSmallestBytes;
}

DeviceProgram planDeviceCall(const CollCall& call, const DeviceCallContext& context) {
  const int avgDivisor = call.op == collAvg && context.nranks > 1 ? context.nranks : 0;
  if (directAllReduceChosen(call, context)) {
    DeviceProgram direct;
    direct.direct = true;
    direct.algorithm = "cma";
    direct.elemSize = call.elemSize;
    direct.avgDivisor = avgDivisor;
    direct.count = call.count;
    return direct;
  }
  LoweringInput in;
  const Schedule schedule = planDeviceSchedule(call, context, &in.geometry);
  in.nranks = context.nranks;
  in.elemSize = call.elemSize;
  in.mode = context.mode;
  in.avgDivisor = avgDivisor;
  in.sendbuff = call.sendbuff;
  in.recvbuff = call.recvbuff;
  return lowerSchedule(schedule, in);
}

DeviceProgram planDevicePointToPoint(const std::vector<CollCall>& calls, const DeviceCallContext& context) {
  // The protocol follows the largest transfer.
  size_t largest = 0;
  for (const CollCall& call : calls) largest = std::max(largest, call.count * call.elemSize);
  LoweringInput in;
  in.nranks = context.nranks;
  in.elemSize = 1;
  in.geometry = context.geometryOf(chooseProtocolOfBytes(largest, concurrentProtocols(context), context.forced));
  in.mode = context.mode;
  return lowerSchedule(pointToPointSchedule(calls), in);
}

}  // namespace coll
