#include "transport/staged/staged_connection.h"

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
    if (piece.bytes > 0)
      kernels::copyBytes(slotOf(region_, layout_, t) + piece.offset, data + landedBytes_, piece.bytes);
    landedBytes_ += piece.bytes;
    if (lastPieceOf(piece, t)) storeFlag(flag, 1u);
  }
  return true;
}

StagedProgress StagedReceiver::progress(RecvConnection& connection) {
  StagedProgress result = StagedProgress::kIdle;
  const ConnectionPlan* plan = nullptr;
  while (const StagedFrame* next = plans_.next(&plan)) {
    const StagedFrame& frame = *next;
    if (frame.bytes > 0 && frameData_ == nullptr) {
      size_t bytes = 0;
      uint64_t tag = 0;
      frameData_ = static_cast<const char*>(connection.tryPeek(&bytes, &tag));
      if (frameData_ == nullptr) return result == StagedProgress::kMoved ? result : StagedProgress::kWaitsForPeer;
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
      return moved ? StagedProgress::kMoved : StagedProgress::kWaitsForKernel;
    }
    if (frame.bytes > 0) connection.release();
    frameData_ = nullptr;
    nextPiece_ = 0;
    landedBytes_ = 0;
    plans_.advance();
    result = StagedProgress::kMoved;
  }
  return result;
}

}  // namespace transport
}  // namespace coll
