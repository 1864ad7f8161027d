#include "src/exec/executor.h"

#include <algorithm>
#include <cstring>
#include <exception>

#include "common/error.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/streaming.h"
#include "src/call_tag.h"

namespace coll {
namespace {

void* pointerOf(const ExecBuffers& b, BufferRef ref, size_t extra) {
  void* base = ref.buffer == BufferId::kAddress ? ref.address
               : ref.buffer == BufferId::kSend  ? const_cast<void*>(b.send)
                                                : b.recv;
  return static_cast<char*>(base) + (ref.offset + extra) * b.elemSize;
}

// The tag the step's slices carry (schedule.h): its own, or the call's.
uint64_t tagOf(const Step& step, const ExecBuffers& b) { return step.tag != 0 ? step.tag : b.tag; }

// The whole caller buffer that `ref` points into: the call's send or receive buffer, or for memory
// named by address (point-to-point, each call its own buffer) the step's range of it.
transport::CallerBuffer callerBufferOf(const ExecBuffers& b, const Step& step, BufferRef ref) {
  if (ref.buffer == BufferId::kSend && b.sendBytes > 0) return {b.send, b.sendBytes};
  if (ref.buffer == BufferId::kRecv && b.recvBytes > 0) return {b.recv, b.recvBytes};
  return {pointerOf(b, ref, 0), step.count * b.elemSize};
}

// Whether `send` takes the step's message by a single copy from the caller's memory (transport.h,
// singleCopyFor), when the slice lies there.
bool bySingleCopy(transport::SendConnection* send, const Step& step, const ExecBuffers& b) {
  if (!b.singleCopySends) return false;
  const size_t messageBytes = step.count * b.elemSize;
  return b.singleCopyLarge ? send->singleCopyPossible(messageBytes) : send->singleCopyFor(messageBytes);
}

}  // namespace

Executor::Executor(ConnectionSource& connections, int rank, int nranks)
    : connections_(connections),
      rank_(rank),
      nranks_(nranks),
      sendClaim_(nranks, 0),
      recvClaim_(nranks, 0),
      externalSent_(nranks, 0),
      sends_(nranks, nullptr),
      recvs_(nranks, nullptr) {}

transport::SendConnection* Executor::sendTo(int peer) {
  transport::SendConnection*& send = sends_[peer];
  if (send == nullptr) send = connections_.sendConnection(peer);
  return send;
}

transport::RecvConnection* Executor::recvFrom(int peer) {
  transport::RecvConnection*& recv = recvs_[peer];
  if (recv == nullptr) recv = connections_.recvConnection(peer);
  return recv;
}

void Executor::abandonExternalSends() {
  for (size_t peer = 0; peer < externalSent_.size(); ++peer) {
    if (!externalSent_[peer]) continue;
    sendTo(static_cast<int>(peer))->abandonExternal();
    externalSent_[peer] = 0;
  }
}

void Executor::awaitExternalSends(ProgressWaiter& waiter) {
  // The caller may reuse its buffers once the call returns: frames sent straight from them must
  // have left first.
  for (size_t peer = 0; peer < externalSent_.size(); ++peer) {
    if (!externalSent_[peer]) continue;
    transport::SendConnection* send = sendTo(static_cast<int>(peer));
    while (send->externalPending()) waiter.idle();
    externalSent_[peer] = 0;
  }
}

bool Executor::claim(const Step& step) {
  // Two steps of one batch that use the same connection must not interleave their slices: the
  // receiver could not tell them apart. The earlier step keeps the connection until it is done.
  for (int i = 0; i < step.nsend; ++i)
    if (sendClaim_[step.sendPeers[i]] == round_) return false;
  for (int i = 0; i < step.nrecv; ++i)
    if (recvClaim_[step.recvPeers[i]] == round_) return false;
  for (int i = 0; i < step.nsend; ++i) sendClaim_[step.sendPeers[i]] = round_;
  for (int i = 0; i < step.nrecv; ++i) recvClaim_[step.recvPeers[i]] = round_;
  return true;
}

bool Executor::advance(ActiveStep& active, const ExecBuffers& b) {
  const Step& step = *active.step;
  size_t slice = step.count - active.done;
  bool usesPeers = step.nrecv + step.nsend > 0;
  if (yieldsToTransfers(step)) slice = std::min(slice, std::max<size_t>(1, kLocalSliceBytes / b.elemSize));
  transport::SendConnection* sends[kMaxStepPeers];
  transport::RecvConnection* recvs[kMaxStepPeers];
  const void* srcs[kMaxStepPeers + 1];
  void* dsts[kMaxStepPeers + 1];
  int nsrcs = 0, ndsts = 0;
  if (usesPeers) {
    // Every connection has the same slot size, so both ends cut a step into the same slices.
    for (int i = 0; i < step.nsend; ++i) sends[i] = sendTo(step.sendPeers[i]);
    for (int i = 0; i < step.nrecv; ++i) recvs[i] = recvFrom(step.recvPeers[i]);
    size_t slotBytes = step.nsend > 0 ? sends[0]->slotBytes() : recvs[0]->slotBytes();
    // A step that only sends its source, all by single copies, posts the rest of it at once: the
    // receiver reads it with one system call and hands it out in slices of a slot (transport.h, postExternal).
    bool wholeBySingleCopy = step.nrecv == 0 && step.src.buffer != BufferId::kNone &&
                             step.dst.buffer == BufferId::kNone && !(step.finalAvg && b.op == collAvg) &&
                             slotBytes % b.elemSize == 0;
    for (int i = 0; i < step.nsend && wholeBySingleCopy; ++i) wholeBySingleCopy = bySingleCopy(sends[i], step, b);
    if (!wholeBySingleCopy) slice = std::min(slice, slotBytes / b.elemSize);
    if (!active.landingOffered && step.nrecv == 1) {
      active.landingOffered = true;
      offerLanding(step, recvs[0], b, slotBytes / b.elemSize);
    }
  }
  size_t sliceBytes = slice * b.elemSize;
  const uint64_t tag = tagOf(step, b);
  for (int i = 0; i < step.nrecv; ++i) {
    size_t bytes = 0;
    uint64_t arrivedTag = 0;
    const void* data = recvs[i]->tryPeek(&bytes, &arrivedTag);
    if (data == nullptr) return false;
    checkArrival(step.recvPeers[i], arrivedTag, bytes, tag, sliceBytes);
    srcs[nsrcs++] = data;
  }
  void* localDst = step.dst.buffer != BufferId::kNone ? pointerOf(b, step.dst, active.done) : nullptr;
  const void* localSrc = step.src.buffer != BufferId::kNone ? pointerOf(b, step.src, active.done) : nullptr;
  // Where the slice's result already lies in the caller's memory (the local destination, or the
  // source when the step only forwards it), sends go straight from there where the transport
  // accepts it (the network transports, some above a size of their own): no copy into a slot
  // (transport.h, acceptsExternal). A step that sends its own input unchanged sends it from the source, before
  // its local copy: the bytes are on the wire while the copy runs.
  const bool sendsSource = step.nrecv == 0 && localSrc != nullptr && !(step.finalAvg && b.op == collAvg);
  const void* resultInCallerMemory = sendsSource ? localSrc : localDst;
  transport::CallerBuffer callerBuffer;
  if (resultInCallerMemory != nullptr) callerBuffer = callerBufferOf(b, step, sendsSource ? step.src : step.dst);
  bool external[kMaxStepPeers];
  for (int i = 0; i < step.nsend; ++i) {
    void* slot = sends[i]->tryAcquire();
    if (slot == nullptr) return false;
    external[i] = resultInCallerMemory != nullptr && sliceBytes > 0 &&
                  (sends[i]->acceptsExternal(callerBuffer) || bySingleCopy(sends[i], step, b));
    if (!external[i]) dsts[ndsts++] = slot;
  }
  if (localSrc != nullptr) {
    // The local source at its place among the received ones (schedule.h, localSourceAt).
    int at = step.localSourceAt >= 0 && step.localSourceAt < nsrcs ? step.localSourceAt : nsrcs;
    for (int i = nsrcs; i > at; --i) srcs[i] = srcs[i - 1];
    srcs[at] = localSrc;
    ++nsrcs;
  }
  if (sendsSource) postSends(step, sends, external, resultInCallerMemory, sliceBytes, tag, /*externalOnly=*/true);
  // A received slice the transport read straight into place (offerLanding) needs no copy there.
  bool landed = localDst != nullptr && nsrcs == 1 && srcs[0] == localDst;
  if (localDst != nullptr && !landed) dsts[ndsts++] = localDst;
  if (slice > 0 && nsrcs > 0 && ndsts > 0) {
    int avgDivisor = (step.finalAvg && b.op == collAvg && b.nranks > 1) ? b.nranks : 0;
    // The kernel takes a bounded number of destinations per pass; wider fan-outs take several.
    for (int first = 0; first < ndsts; first += kernels::kMaxCopyDestinations) {
      int count = std::min(ndsts - first, kernels::kMaxCopyDestinations);
      // The local destination is last; it streams past the caches when the call is too large to
      // stay in them (see streaming.h).
      bool stream = b.streamOutput && localDst != nullptr && first + count == ndsts;
      if (stream) {
        kernels::reduceCopyStreamingLast(b.datatype, b.op, srcs, nsrcs, dsts + first, count, slice, avgDivisor);
      } else {
        kernels::reduceCopy(b.datatype, b.op, srcs, nsrcs, dsts + first, count, slice, avgDivisor);
      }
    }
  }
  postSends(step, sends, external, resultInCallerMemory, sliceBytes, tag, /*externalOnly=*/false);
  for (int i = 0; i < step.nrecv; ++i) recvs[i]->release();
  active.done += slice;
  return true;
}

void Executor::postSends(const Step& step, transport::SendConnection** sends, const bool* external,
                         const void* fromCallerMemory, size_t sliceBytes, uint64_t tag, bool externalOnly) {
  for (int i = 0; i < step.nsend; ++i) {
    if (sends[i] == nullptr) continue;  // posted already
    if (external[i]) {
      sends[i]->postExternal(fromCallerMemory, sliceBytes, tag);
      externalSent_[step.sendPeers[i]] = 1;
    } else if (externalOnly) {
      continue;
    } else {
      sends[i]->post(sliceBytes, tag);
    }
    sends[i] = nullptr;
  }
}

void Executor::throwArrivalMismatch(int peer, uint64_t tag, size_t bytes, uint64_t expectedTag,
                                    size_t expectedBytes) const {
  if (tag != expectedTag) throwTagMismatch(peer, tag, rank_, expectedTag);
  // The same call cut into other slices: only a peer whose bytes went wrong on the way sends this.
  throwError(collRemoteError, "rank %d sent a slice of %zu bytes of %s where this rank (%d) expected %zu", peer, bytes,
             describeCallTag(tag).c_str(), rank_, expectedBytes);
}

bool Executor::tryRunSmallPointToPoint(const std::vector<CollCall>& calls, ProgressWaiter& waiter) {
  if (calls.size() > kMaxSlotTransfers) return false;
  SlotTransfer transfers[kMaxSlotTransfers];
  for (size_t i = 0; i < calls.size(); ++i) {
    const CollCall& call = calls[i];
    const size_t bytes = call.count * call.elemSize;
    transfers[i] = call.type == CollType::kSend
                       ? SlotTransfer::sendTo(call.peer, call.sendbuff, bytes, pointToPointTagOf(call))
                       : SlotTransfer::receiveFrom(call.peer, call.recvbuff, bytes, pointToPointTagOf(call));
  }
  return tryRunSlotTransfers(transfers, calls.size(), waiter);
}

bool Executor::tryRunSmallAllToAllV(const CollCall& call, ProgressWaiter& waiter) {
  if (2 * static_cast<size_t>(nranks_ - 1) > kMaxSlotTransfers) return false;
  const VariableCounts& v = *call.counts;
  const size_t elemSize = call.elemSize;
  const auto* send = static_cast<const uint8_t*>(call.sendbuff);
  auto* recv = static_cast<uint8_t*>(call.recvbuff);
  // As the pairwise schedule's steps (algorithms.h, pairwiseAllToAllV): each pair's message carries
  // its count in the tag, so a rank that runs the schedule instead exchanges with this one alike.
  const uint64_t callTag = collectiveTagOf(call);
  SlotTransfer transfers[kMaxSlotTransfers];
  size_t count = 0;
  for (int k = 1; k < nranks_; ++k) {
    const int to = (rank_ + k) % nranks_, from = (rank_ - k + nranks_) % nranks_;
    transfers[count++] = SlotTransfer::sendTo(to, send + v.sdispls[to] * elemSize, v.sendcounts[to] * elemSize,
                                              callTag | v.sendcounts[to]);
    transfers[count++] = SlotTransfer::receiveFrom(from, recv + v.rdispls[from] * elemSize,
                                                   v.recvcounts[from] * elemSize, callTag | v.recvcounts[from]);
  }
  if (!tryRunSlotTransfers(transfers, count, waiter)) return false;
  // The rank's own block (validation refuses overlapping buffers: the call is never in place).
  if (v.sendcounts[rank_] > 0)
    std::memcpy(recv + v.rdispls[rank_] * elemSize, send + v.sdispls[rank_] * elemSize, v.sendcounts[rank_] * elemSize);
  return true;
}

bool Executor::tryRunSlotTransfers(const SlotTransfer* transfers, size_t count, ProgressWaiter& waiter) {
  // Up to here a copy through the slot costs less than the schedule (and, on sockets, than
  // waiting for a frame sent from the caller's memory to leave, as larger sends do).
  constexpr size_t kSmallBytes = 16 << 10;
  transport::SendConnection* sends[kMaxSlotTransfers];
  void* slots[kMaxSlotTransfers];
  ++round_;  // claims of this exchange, so a peer appearing twice sends it to the schedule
  for (size_t i = 0; i < count; ++i) {
    const SlotTransfer& t = transfers[i];
    if (t.send) {
      if (sendClaim_[t.peer] == round_) return false;
      sendClaim_[t.peer] = round_;
      sends[i] = sendTo(t.peer);
      if (t.bytes > kSmallBytes || t.bytes > sends[i]->slotBytes() || (slots[i] = sends[i]->tryAcquire()) == nullptr)
        return false;
    } else {
      if (recvClaim_[t.peer] == round_) return false;
      recvClaim_[t.peer] = round_;
      if (t.bytes > kSmallBytes || t.bytes > recvFrom(t.peer)->slotBytes()) return false;
    }
  }
  size_t pending = 0;
  for (size_t i = 0; i < count; ++i) {
    const SlotTransfer& t = transfers[i];
    if (t.bytes == 0) continue;  // as in the schedule: a zero-byte transfer exchanges nothing
    if (t.send) {
      std::memcpy(slots[i], t.from, t.bytes);
      sends[i]->post(t.bytes, t.tag);
    } else {
      ++pending;
    }
  }
  uint8_t done[kMaxSlotTransfers] = {};
  while (pending > 0) {
    bool moved = false;
    for (size_t i = 0; i < count; ++i) {
      const SlotTransfer& t = transfers[i];
      if (t.send || t.bytes == 0 || done[i]) continue;
      transport::RecvConnection* recv = recvFrom(t.peer);
      size_t arrived = 0;
      uint64_t tag = 0;
      const void* data = recv->tryPeek(&arrived, &tag);
      if (data == nullptr) continue;
      checkArrival(t.peer, tag, arrived, t.tag, t.bytes);
      std::memcpy(t.to, data, t.bytes);
      recv->release();
      done[i] = 1;
      --pending;
      moved = true;
    }
    if (pending == 0) break;
    if (moved) {
      waiter.progressed();
    } else {
      waiter.idle();
    }
  }
  return true;
}

void Executor::offerLanding(const Step& step, transport::RecvConnection* recv, const ExecBuffers& b,
                            size_t sliceElems) {
  if (step.src.buffer != BufferId::kNone || step.dst.buffer == BufferId::kNone || step.count == 0 ||
      !recv->acceptsLanding())
    return;
  const bool batchSends =
      std::any_of(batch_.begin(), batch_.end(), [](const ActiveStep& a) { return a.step->nsend > 0; });
  recv->offerLanding(pointerOf(b, step.dst, 0), step.count * b.elemSize, sliceElems * b.elemSize, batchSends,
                     tagOf(step, b));
  landings_.push_back(recv);
}

void Executor::withdrawLandings() {
  for (transport::RecvConnection* recv : landings_) recv->withdrawLanding();
  landings_.clear();
}

void Executor::run(const Schedule& schedule, const ExecBuffers& buffers, ProgressWaiter& waiter) {
  // No transport writes into the caller's memory after the call, even one that fails, nor reads
  // from it: a failed call does not wait for the frames it sent from there.
  struct Withdraw {
    Executor& executor;
    const int unwinding = std::uncaught_exceptions();
    ~Withdraw() {
      executor.withdrawLandings();
      if (std::uncaught_exceptions() > unwinding) executor.abandonExternalSends();
    }
  } withdraw{*this};
  const std::vector<Step>& steps = schedule.steps;
  size_t next = 0;
  while (next < steps.size()) {
    if (steps[next].afterSends) awaitExternalSends(waiter);
    batch_.clear();
    do {
      batch_.push_back({&steps[next], 0, false});
    } while (steps[next++].joinNext && next < steps.size());
    size_t remaining = batch_.size();
    // Zero-count steps exchange nothing on either side.
    for (ActiveStep& a : batch_)
      if (a.step->count == 0) --remaining;
    while (remaining > 0) {
      bool moved = false;
      ++round_;
      for (ActiveStep& a : batch_) {
        if (a.done == a.step->count) continue;
        if (batch_.size() > 1 && !claim(*a.step)) continue;
        // Keep moving one step while it can: fewer rounds, longer streams through one connection.
        // A local copy beside transfers moves one slice per round instead (yieldsToTransfers).
        const bool yields = yieldsToTransfers(*a.step);
        while (a.done < a.step->count && advance(a, buffers)) {
          moved = true;
          if (yields) break;
        }
        if (a.done == a.step->count) --remaining;
      }
      if (moved) {
        waiter.progressed();
      } else {
        waiter.idle();
      }
    }
  }
  awaitExternalSends(waiter);
}

}  // namespace coll
