#include "transport/staged/staging_plan.h"

#include <algorithm>

#include "common/error.h"

namespace coll {
namespace transport {
namespace {

// Appends the transfers of one step's slices on the connection that carried `seq` slices before.
void appendStepTransfers(const CallShape& call, const device::DeviceStep& step, uint32_t seq,
                         std::vector<StagedTransfer>* out) {
  const uint64_t sliceElems = device::sliceElems(call.geometry, call.elemSize);
  const uint64_t slices = device::stepSlices(step, sliceElems);
  for (uint64_t s = 0; s < slices; ++s)
    for (uint32_t lane = 0; lane < call.geometry.lanes; ++lane) {
      const device::LaneRange r = device::laneRange(step, s, sliceElems, call.geometry.lanes, lane, call.elemSize);
      out->push_back({static_cast<uint32_t>(seq + s), lane, (r.end - r.begin) * call.elemSize});
    }
}

// Cuts the transfers into frames: consecutive lanes of one slice, at most frameBytes each.
void cutFrames(ConnectionPlan& plan, size_t frameBytes) {
  StagedFrame open{0, 0, 0};
  auto close = [&] {
    if (open.pieces > 0) plan.frames.push_back(open);
    open = StagedFrame{static_cast<uint32_t>(plan.pieces.size()), 0, 0};
  };
  for (uint32_t t = 0; t < plan.transfers.size(); ++t) {
    const StagedTransfer& transfer = plan.transfers[t];
    const bool newSlice = t > 0 && plan.transfers[t - 1].seq != transfer.seq;
    if (newSlice) close();
    if (transfer.bytes == 0) {
      close();
      plan.pieces.push_back({t, 0, 0});
      open.pieces = 1;
      close();
      continue;
    }
    for (uint64_t done = 0; done < transfer.bytes;) {
      if (open.bytes == frameBytes) close();
      const uint64_t piece = std::min<uint64_t>(transfer.bytes - done, frameBytes - open.bytes);
      plan.pieces.push_back({t, done, piece});
      ++open.pieces;
      open.bytes += piece;
      done += piece;
    }
  }
  close();
}

}  // namespace

uint64_t ConnectionPlan::bytes() const {
  uint64_t total = 0;
  for (const StagedTransfer& t : transfers) total += t.bytes;
  return total;
}

ConnectionPlan planConnection(const CallShape& call, int peer, StagedDirection direction, size_t frameBytes) {
  if (frameBytes == 0) throwError(collInternalError, "staging: a host connection with 0-byte slots");
  ConnectionPlan plan;
  plan.tag = call.tag;
  plan.describeTag = call.describeTag;
  const bool send = direction == StagedDirection::kSend;
  // Steps in order are the connection's slices in order (src/plan/device_program.cc numbers
  // them so), whatever batch or round they run in.
  for (uint32_t i = 0; i < call.nsteps; ++i) {
    const device::DeviceStep& step = call.steps[i];
    const int n = send ? step.nsend : step.nrecv;
    for (int k = 0; k < n; ++k) {
      if ((send ? step.sendPeers[k] : step.recvPeers[k]) != peer) continue;
      appendStepTransfers(call, step, send ? step.sendSeq[k] : step.recvSeq[k], &plan.transfers);
    }
  }
  std::stable_sort(plan.transfers.begin(), plan.transfers.end(),
                   [](const StagedTransfer& a, const StagedTransfer& b) { return a.seq < b.seq; });
  cutFrames(plan, frameBytes);
  return plan;
}

}  // namespace transport
}  // namespace coll
