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
                                     size_t singleCopyMin, size_t singleCopyMax)
    : fifo_(fifo, depth, slotBytes, receiverBell), singleCopyMin_(singleCopyMin), singleCopyMax_(singleCopyMax) {
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

void ShmSendConnection::post(size_t bytes) {
  ShmSlotControl& control = fifo_.control(head_);
  // A small payload travels in the control line itself; the copy stays in this core's cache.
  if (bytes <= ShmSlotControl::kInlineBytes) std::memcpy(control.inlineData, fifo_.slot(head_), bytes);
  publish(control, bytes);
}

void ShmSendConnection::postExternal(const void* data, size_t bytes) {
  ShmSlotControl& control = fifo_.control(head_);
  uint64_t address = reinterpret_cast<uintptr_t>(data);
  std::memcpy(control.inlineData, &address, sizeof(address));
  ++singleCopiesPosted_;
  publish(control, bytes | ShmSlotControl::kSingleCopyFlag);
}

bool ShmSendConnection::externalPending() const {
  return fifo_.header->singleCopiesDone.load(std::memory_order_acquire) < singleCopiesPosted_;
}

void ShmSendConnection::publish(ShmSlotControl& control, uint64_t bytes) {
  control.bytes = bytes;
  ++head_;
  control.posted.store(head_, std::memory_order_release);
  ringDoorbell(fifo_.bell);
}

ShmRecvConnection::ShmRecvConnection(uint8_t* fifo, int depth, size_t slotBytes, Doorbell* senderBell, int senderPid)
    : fifo_(fifo, depth, slotBytes, senderBell),
      tail_(fifo_.header->tail.load(std::memory_order_relaxed)),
      senderPid_(senderPid),
      singleCopiesDone_(fifo_.header->singleCopiesDone.load(std::memory_order_relaxed)) {}

const void* ShmRecvConnection::tryPeek(size_t* bytes) {
  const ShmSlotControl& control = fifo_.control(tail_);
  if (control.posted.load(std::memory_order_acquire) != tail_ + 1) return nullptr;
  // The size comes from another process: clamp it so a corrupt value cannot make a reader run
  // past the slot; the executor then reports the mismatch.
  uint64_t raw = control.bytes;
  uint64_t posted = std::min<uint64_t>(raw & ~ShmSlotControl::kSingleCopyFlag, fifo_.slotBytes + 1);
  *bytes = posted;
  if ((raw & ShmSlotControl::kSingleCopyFlag) != 0 && posted <= fifo_.slotBytes)
    return fetchSingleCopy(control, posted);
  return posted <= ShmSlotControl::kInlineBytes ? control.inlineData : fifo_.slot(tail_);
}

const void* ShmRecvConnection::fetchSingleCopy(const ShmSlotControl& control, size_t bytes) {
  if (fetched_ == tail_ + 1) return fetchedAt_;  // read on an earlier peek of this slot
  uint8_t* to = landing_.placeOf(tail_, bytes);
  if (to == nullptr) to = fifo_.slot(tail_);
  if (to != fifo_.slot(tail_)) receivedInPlace_.fetch_add(1, std::memory_order_relaxed);
  uint64_t address = 0;
  std::memcpy(&address, control.inlineData, sizeof(address));
  readPeerMemory(senderPid_, address, to, bytes);
  fetched_ = tail_ + 1;
  fetchedAt_ = to;
  return to;
}

void ShmRecvConnection::offerLanding(void* destination, size_t totalBytes, size_t sliceBytes, bool) {
  landing_.set(destination, totalBytes, sliceBytes, tail_);
}

void ShmRecvConnection::release() {
  // A single-copy slot's sender waits for this before its call returns (and its buffer changes).
  if (fetched_ == tail_ + 1) fifo_.header->singleCopiesDone.store(++singleCopiesDone_, std::memory_order_release);
  ++tail_;
  fifo_.header->tail.store(tail_, std::memory_order_release);
  ringDoorbell(fifo_.bell);
}

}  // namespace transport
}  // namespace coll
