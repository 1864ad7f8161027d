#include "transport/staged/staged_connection.h"

#include "common/clock.h"
#include "common/error.h"
#include "kernels/cpu/reduce.h"

namespace coll {
namespace transport {
namespace {

uint32_t* flagOf(char* region, const StagingLayout& layout, const StagedTransfer& t) {
  return reinterpret_cast<uint32_t*>(region + layout.flagOffset(t.lane, t.seq % layout.geometry.depth));
}
char* slotOf(char* region, const StagingLayout& layout, const StagedTransfer& t) {
  return region + layout.slotOffset(t.lane, t.seq % layout.geometry.depth);
}
uint32_t loadFlag(const uint32_t* flag) { return __atomic_load_n(flag, __ATOMIC_ACQUIRE); }
void storeFlag(uint32_t* flag, uint32_t value) { __atomic_store_n(flag, value, __ATOMIC_RELEASE); }
// A lane's slot among all the lanes' (lane * depth + slot).
uint32_t slotIndexOf(const StagingLayout& layout, const StagedTransfer& t) {
  return t.lane * layout.geometry.depth + t.seq % layout.geometry.depth;
}
bool lastPieceOf(const FramePiece& piece, const StagedTransfer& t) { return piece.offset + piece.bytes == t.bytes; }

std::string describe(const ConnectionPlan& plan, uint64_t tag) {
  if (plan.describeTag != nullptr) return plan.describeTag(tag);
  return formatString("the call of tag 0x%016llx", static_cast<unsigned long long>(tag));
}

}  // namespace

const StagedFrame* PlanQueue::next(const ConnectionPlan** plan) {
  while (!plans_.empty() && nextFrame_ == plans_.front().frames.size()) {
    plans_.pop_front();
    nextFrame_ = 0;
  }
  if (plans_.empty()) return nullptr;
  *plan = &plans_.front();
  return &plans_.front().frames[nextFrame_];
}

bool StagedSender::lanesPosted(const ConnectionPlan& plan, const StagedFrame& frame) const {
  for (uint32_t p = frame.firstPiece; p < frame.firstPiece + frame.pieces; ++p)
    if (loadFlag(flagOf(region_, layout_, plan.transfers[plan.pieces[p].transfer])) != 1u) return false;
  return true;
}

void StagedSender::handBack(const ConnectionPlan& plan, const StagedFrame& frame) {
  for (uint32_t p = frame.firstPiece; p < frame.firstPiece + frame.pieces; ++p) {
    const FramePiece& piece = plan.pieces[p];
    const StagedTransfer& t = plan.transfers[piece.transfer];
    if (lastPieceOf(piece, t)) storeFlag(flagOf(region_, layout_, t), 0u);
  }
}

StagedProgress StagedSender::progress(SendConnection& connection) {
  StagedProgress result = StagedProgress::kIdle;
  const ConnectionPlan* plan = nullptr;
  while (const StagedFrame* next = plans_.next(&plan)) {
    const StagedFrame& frame = *next;
    if (!lanesPosted(*plan, frame)) return result == StagedProgress::kMoved ? result : StagedProgress::kWaitsForKernel;
    if (frame.bytes > 0) {
      if (frame.bytes > connection.slotBytes())
        throwError(collInternalError, "staging to rank %d: a %llu-byte frame for %zu-byte slots", peer_,
                   static_cast<unsigned long long>(frame.bytes), connection.slotBytes());
      char* slot = static_cast<char*>(connection.tryAcquire());
      if (slot == nullptr) return result == StagedProgress::kMoved ? result : StagedProgress::kWaitsForPeer;
      for (uint32_t p = frame.firstPiece; p < frame.firstPiece + frame.pieces; ++p) {
        const FramePiece& piece = plan->pieces[p];
        kernels::copyBytes(slot, slotOf(region_, layout_, plan->transfers[piece.transfer]) + piece.offset, piece.bytes);
        slot += piece.bytes;
      }
      connection.post(frame.bytes, plan->tag);
    }
    handBack(*plan, frame);
    plans_.advance();
    result = StagedProgress::kMoved;
  }
  return result;
}

StagedReceiver::StagedReceiver(int peer, char* region, const StagingLayout& layout, DeviceSlots device)
    : peer_(peer), region_(region), layout_(layout), device_(device) {
  if (device_.uploader != nullptr) uploadOfSlot_.assign(size_t(layout_.geometry.lanes) * layout_.geometry.depth, 0);
}

void StagedReceiver::complete(const StagedTransfer& t, uint32_t* flag) {
  // Nothing to copy for a lane without elements in this slice: the kernel reads no byte of it.
  if (device_.uploader == nullptr || t.bytes == 0) {
    storeFlag(flag, 1u);
    return;
  }
  const uint32_t slot = slotIndexOf(layout_, t);
  char* destination = device_.slots + layout_.slotInSlots(t.lane, t.seq % layout_.geometry.depth);
  const uint64_t number = device_.uploader->start(destination, slotOf(region_, layout_, t), t.bytes);
  uploadOfSlot_[slot] = number;
  uploads_.push_back(Upload{number, slot, flag, monotonicNs()});
}

bool StagedReceiver::retireUploads() {
  if (uploads_.empty()) return false;
  const uint64_t done = device_.uploader->completed();
  bool retired = false;
  while (!uploads_.empty() && uploads_.front().number <= done) {
    // The device slot holds the bytes: the kernel may read it, and the pinned slot is free again
    // once the kernel clears the flag.
    storeFlag(uploads_.front().flag, 1u);
    uploadOfSlot_[uploads_.front().slot] = 0;
    uploads_.pop_front();
    retired = true;
  }
  if (!uploads_.empty() && device_.copyTimeoutNs > 0 &&
      monotonicNs() - uploads_.front().startedNs > device_.copyTimeoutNs)
    throwError(collTimeout,
               "staging from rank %d: a slice's copy into device memory (COLL_STAGED_RECV=copy) did not complete in "
               "%lld ms: on the GPU it waits behind work this rank's collectives wait for (streams sharing a "
               "hardware queue, as with CUDA_DEVICE_MAX_CONNECTIONS=1); COLL_STAGED_RECV=mapped needs no copy",
               peer_, static_cast<long long>(device_.copyTimeoutNs / 1000000));
  return retired;
}

void StagedReceiver::throwFrameOfAnotherCall(const ConnectionPlan& plan, uint64_t tag) const {
  // Before a byte of it lands: another call's frame may have the size this rank expects.
  throwError(collRemoteError,
             "staging from rank %d: it sent a frame of %s where this rank runs %s: every rank must pass the same "
             "count and datatype (COLL_CHECK=1 names the first rank that differs)",
             peer_, describe(plan, tag).c_str(), describe(plan, plan.tag).c_str());
}

bool StagedReceiver::land(const ConnectionPlan& plan, const StagedFrame& frame, const char* data) {
  for (; nextPiece_ < frame.pieces; ++nextPiece_) {
    const FramePiece& piece = plan.pieces[frame.firstPiece + nextPiece_];
    const StagedTransfer& t = plan.transfers[piece.transfer];
    uint32_t* flag = flagOf(region_, layout_, t);
    // The kernel has not yet read what the slot held (a lane's depth of slices earlier).
    if (loadFlag(flag) != 0u) return false;
    // Or that is still being copied into device memory (it is marked full when done).
    if (!uploadOfSlot_.empty() && uploadOfSlot_[slotIndexOf(layout_, t)] != 0) return false;
    if (piece.bytes > 0)
      kernels::copyBytes(slotOf(region_, layout_, t) + piece.offset, data + landedBytes_, piece.bytes);
    landedBytes_ += piece.bytes;
    if (lastPieceOf(piece, t)) complete(t, flag);
  }
  return true;
}

StagedProgress StagedReceiver::progress(RecvConnection& connection) {
  StagedProgress result = retireUploads() ? StagedProgress::kMoved : StagedProgress::kIdle;
  const ConnectionPlan* plan = nullptr;
  while (const StagedFrame* next = plans_.next(&plan)) {
    const StagedFrame& frame = *next;
    if (frame.bytes > 0 && frameData_ == nullptr) {
      size_t bytes = 0;
      uint64_t tag = 0;
      frameData_ = static_cast<const char*>(connection.tryPeek(&bytes, &tag));
      if (frameData_ == nullptr)
        return result == StagedProgress::kMoved ? result : waiting(StagedProgress::kWaitsForPeer);
      if (tag != plan->tag) throwFrameOfAnotherCall(*plan, tag);
      if (bytes != frame.bytes) {
        const StagedTransfer& first = plan->transfers[plan->pieces[frame.firstPiece].transfer];
        throwError(collRemoteError,
                   "staging from rank %d: a frame of %zu bytes arrived where %llu were expected (slice %u, lane %u "
                   "on): the ranks planned different calls",
                   peer_, bytes, static_cast<unsigned long long>(frame.bytes), first.seq, first.lane);
      }
    }
    const uint32_t landedBefore = nextPiece_;
    if (!land(*plan, frame, frameData_)) {
      const bool moved = result == StagedProgress::kMoved || nextPiece_ > landedBefore;
      if (moved) return StagedProgress::kMoved;
      return waiting(StagedProgress::kWaitsForKernel);
    }
    if (frame.bytes > 0) connection.release();
    frameData_ = nullptr;
    nextPiece_ = 0;
    landedBytes_ = 0;
    plans_.advance();
    result = StagedProgress::kMoved;
  }
  return result == StagedProgress::kMoved ? result : waiting(result);
}

}  // namespace transport
}  // namespace coll
