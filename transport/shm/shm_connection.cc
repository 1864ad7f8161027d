#include "transport/shm/shm_connection.h"

#include "transport/shm/cross_memory.h"

#include <algorithm>
#include <cstring>

namespace coll {
namespace transport {
namespace {

constexpr size_t roundUp(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

size_t shmFifoBytes(int depth, size_t slotBytes) {
  return sizeof(ShmFifoHeader) + sizeof(ShmSlotControl) * static_cast<size_t>(depth) +
         roundUp(slotBytes, 64) * static_cast<size_t>(depth);
}

ShmFifoView::ShmFifoView(uint8_t* fifo, int depth, size_t slotBytes, Doorbell* otherEnd)
    : header(reinterpret_cast<ShmFifoHeader*>(fifo)),
      controls(reinterpret_cast<ShmSlotControl*>(fifo + sizeof(ShmFifoHeader))),
      data(fifo + sizeof(ShmFifoHeader) + sizeof(ShmSlotControl) * static_cast<size_t>(depth)),
      slotBytes(slotBytes),
      depth(depth),
      bell(otherEnd) {}

ShmSendConnection::ShmSendConnection(uint8_t* fifo, int depth, size_t slotBytes, Doorbell* receiverBell,
                                     size_t singleCopyMin, size_t singleCopyMax, bool window)
    : fifo_(fifo, depth, slotBytes, receiverBell),
      singleCopyMin_(singleCopyMin),
      singleCopyMax_(singleCopyMax),
      window_(window) {
  knownTail_ = head_ = fifo_.header->tail.load(std::memory_order_acquire);
  singleCopiesPosted_ = fifo_.header->singleCopiesDone.load(std::memory_order_acquire);
}

void* ShmSendConnection::tryAcquire() {
  const uint64_t depth = static_cast<uint64_t>(fifo_.depth);
  if (head_ - knownTail_ >= depth) {
    knownTail_ = fifo_.header->tail.load(std::memory_order_acquire);
    if (head_ - knownTail_ >= depth) return nullptr;
  }
  return fifo_.slot(head_);
}

void ShmSendConnection::post(size_t bytes, uint64_t tag) {
  ShmSlotControl& control = fifo_.control(head_);
  // A small payload travels in the control line itself; the copy stays in this core's cache.
  if (bytes <= ShmSlotControl::kInlineBytes) std::memcpy(control.inlineData, fifo_.slot(head_), bytes);
  publish(control, bytes, tag);
}

void ShmSendConnection::postExternal(const void* data, size_t bytes, uint64_t tag) {
  ShmSlotControl& control = fifo_.control(head_);
  uint64_t address = reinterpret_cast<uintptr_t>(data);
  std::memcpy(control.inlineData, &address, sizeof(address));
  ++singleCopiesPosted_;
  publish(control, bytes | ShmSlotControl::kSingleCopyFlag, tag);
}

bool ShmSendConnection::externalPending() const {
  return fifo_.header->singleCopiesDone.load(std::memory_order_acquire) < singleCopiesPosted_;
}

void ShmSendConnection::publish(ShmSlotControl& control, uint64_t bytes, uint64_t tag) {
  control.bytes = bytes;
  control.tag = tag;
  ++head_;
  control.posted.store(head_, std::memory_order_release);
  ringDoorbell(fifo_.bell);
}

ShmRecvConnection::ShmRecvConnection(uint8_t* fifo, int depth, size_t slotBytes, Doorbell* senderBell, int senderPid)
    : fifo_(fifo, depth, slotBytes, senderBell),
      tail_(fifo_.header->tail.load(std::memory_order_relaxed)),
      senderPid_(senderPid),
      fetchedAt_(static_cast<size_t>(depth), nullptr),
      singleCopiesDone_(fifo_.header->singleCopiesDone.load(std::memory_order_relaxed)) {}

const void* ShmRecvConnection::tryPeek(size_t* bytes, uint64_t* tag) {
  const ShmSlotControl& control = fifo_.control(tail_);
  if (control.posted.load(std::memory_order_acquire) != tail_ + 1) return nullptr;
  // Sizes come from another process: a FIFO slot's is clamped so that a corrupt value cannot make
  // a reader run past the slot (the executor then reports the mismatch); a single copy's is
  // handed out a slot's worth at a time, and read whole only into a landing that it fits and
  // whose call it belongs to. A single copy of another call is not read at all: the executor
  // fails on its tag before it would look at the bytes.
  const uint64_t raw = control.bytes;
  const uint64_t posted = raw & ~ShmSlotControl::kSingleCopyFlag;
  *tag = control.tag;
  peekedSingleCopy_ = (raw & ShmSlotControl::kSingleCopyFlag) != 0;
  if (peekedSingleCopy_ && posted > consumed_) {
    peekedPostBytes_ = static_cast<size_t>(posted);
    peekedBytes_ = static_cast<size_t>(std::min<uint64_t>(posted - consumed_, fifo_.slotBytes));
    *bytes = peekedBytes_;
    if (landing_.totalBytes > 0 && *tag != landing_.tag) return fifo_.slot(tail_);
    return fetchSingleCopy(control, peekedPostBytes_, peekedBytes_);
  }
  peekedPostBytes_ = 0;  // a FIFO slot, or a single copy of nothing (only a corrupt one): released whole
  peekedBytes_ = static_cast<size_t>(std::min<uint64_t>(posted, fifo_.slotBytes + 1));
  *bytes = peekedBytes_;
  return peekedBytes_ <= ShmSlotControl::kInlineBytes ? control.inlineData : fifo_.slot(tail_);
}

const void* ShmRecvConnection::fetchSingleCopy(const ShmSlotControl& control, size_t postBytes, size_t sliceBytes) {
  if (tail_ < fetchedEnd_) return fetchedAt_[tail_ % fetchedAt_.size()] + consumed_;  // read whole before
  if (fetchedSlice_ == slices_ + 1) return fetchedSliceAt_;                           // read on an earlier peek
  uint64_t address = 0;
  std::memcpy(&address, control.inlineData, sizeof(address));
  // A landing cut into other slices than this FIFO's (an element size that does not divide the
  // slot) cannot take a post of several slices whole: there each post must be exactly the one
  // frame the executor expects at its place.
  const bool sameSlices = landing_.sliceBytes == fifo_.slotBytes;
  auto placeOfPost = [&](uint64_t frame, size_t bytes) {
    return sameSlices ? landing_.placeOfFrames(frame, bytes, control.tag) : landing_.placeOf(frame, bytes, control.tag);
  };
  uint8_t* to = consumed_ == 0 ? placeOfPost(slices_, postBytes) : nullptr;
  if (to == nullptr) {
    uint8_t* place = landing_.placeOf(slices_, sliceBytes, control.tag);
    if (place != nullptr) receivedInPlace_.fetch_add(1, std::memory_order_relaxed);
    fetchedSliceAt_ = place != nullptr ? place : fifo_.slot(tail_);
    singleCopyReads_.fetch_add(1, std::memory_order_relaxed);
    readPeerMemory(senderPid_, address + consumed_, fetchedSliceAt_, sliceBytes);
    fetchedSlice_ = slices_ + 1;
    return fetchedSliceAt_;
  }
  // Read on through the single copies already posted behind this one that continue both the
  // sender's buffer and our destination (the next slices of one message): one system call for
  // the run. Each call pins the pages it copies and costs a fixed part besides; slice by slice
  // (128 KiB) a 4 MiB sendrecv between two ranks took much longer than one read of 4 MiB.
  uint64_t end = tail_ + 1;
  size_t run = postBytes;
  uint64_t slicesRead = (postBytes + fifo_.slotBytes - 1) / fifo_.slotBytes;
  while (end < tail_ + static_cast<uint64_t>(fifo_.depth)) {
    const ShmSlotControl& next = fifo_.control(end);
    if (next.posted.load(std::memory_order_acquire) != end + 1) break;
    const uint64_t raw = next.bytes;
    const size_t nextBytes = static_cast<size_t>(raw & ~ShmSlotControl::kSingleCopyFlag);
    if ((raw & ShmSlotControl::kSingleCopyFlag) == 0 || nextBytes == 0 || next.tag != control.tag) break;
    uint64_t nextAddress = 0;
    std::memcpy(&nextAddress, next.inlineData, sizeof(nextAddress));
    uint8_t* place = placeOfPost(slices_ + slicesRead, nextBytes);
    if (place == nullptr || nextAddress != address + run || place != to + run) break;
    fetchedAt_[end % fetchedAt_.size()] = place;
    run += nextBytes;
    slicesRead += (nextBytes + fifo_.slotBytes - 1) / fifo_.slotBytes;
    ++end;
  }
  receivedInPlace_.fetch_add(slicesRead, std::memory_order_relaxed);
  singleCopyReads_.fetch_add(1, std::memory_order_relaxed);
  readPeerMemory(senderPid_, address, to, run);
  fetchedAt_[tail_ % fetchedAt_.size()] = to;
  fetchedEnd_ = end;
  return to;
}

void ShmRecvConnection::offerLanding(void* destination, size_t totalBytes, size_t sliceBytes, bool, uint64_t tag) {
  landing_.set(destination, totalBytes, sliceBytes, slices_, tag);
}

void ShmRecvConnection::release() {
  ++slices_;
  if (consumed_ + peekedBytes_ < peekedPostBytes_) {
    consumed_ += peekedBytes_;  // more slices of this single copy to come
    return;
  }
  // A single-copy slot's sender waits for this before its call returns (and its buffer changes).
  if (peekedSingleCopy_) fifo_.header->singleCopiesDone.store(++singleCopiesDone_, std::memory_order_release);
  consumed_ = 0;
  ++tail_;
  fifo_.header->tail.store(tail_, std::memory_order_release);
  ringDoorbell(fifo_.bell);
}

}  // namespace transport
}  // namespace coll
