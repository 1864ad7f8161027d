#include "transport/shm/shm_connection.h"

#include <algorithm>

namespace coll {
namespace transport {
namespace {

constexpr size_t roundUp(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

size_t shmFifoBytes(int depth, size_t slotBytes) {
  return sizeof(ShmFifoHeader) + roundUp(sizeof(uint64_t) * depth, 64) + slotBytes * static_cast<size_t>(depth);
}

ShmFifoView::ShmFifoView(uint8_t* fifo, int depth, size_t slotBytes, Doorbell* otherEnd)
    : header(reinterpret_cast<ShmFifoHeader*>(fifo)),
      sizes(reinterpret_cast<uint64_t*>(fifo + sizeof(ShmFifoHeader))),
      data(fifo + sizeof(ShmFifoHeader) + roundUp(sizeof(uint64_t) * depth, 64)),
      slotBytes(slotBytes),
      depth(depth),
      bell(otherEnd) {}

ShmSendConnection::ShmSendConnection(uint8_t* fifo, int depth, size_t slotBytes, Doorbell* receiverBell)
    : fifo_(fifo, depth, slotBytes, receiverBell), head_(fifo_.header->head.load(std::memory_order_relaxed)) {}

void* ShmSendConnection::tryAcquire() {
  if (head_ - fifo_.header->tail.load(std::memory_order_acquire) >= static_cast<uint64_t>(fifo_.depth)) return nullptr;
  return fifo_.slot(head_);
}

void ShmSendConnection::post(size_t bytes) {
  fifo_.sizes[head_ % fifo_.depth] = bytes;
  ++head_;
  fifo_.header->head.store(head_, std::memory_order_release);
  ringDoorbell(fifo_.bell);
}

ShmRecvConnection::ShmRecvConnection(uint8_t* fifo, int depth, size_t slotBytes, Doorbell* senderBell)
    : fifo_(fifo, depth, slotBytes, senderBell), tail_(fifo_.header->tail.load(std::memory_order_relaxed)) {}

const void* ShmRecvConnection::tryPeek(size_t* bytes) {
  if (fifo_.header->head.load(std::memory_order_acquire) <= tail_) return nullptr;
  // The size comes from another process: clamp it so a corrupt value cannot make a reader run
  // past the slot; the executor then reports the mismatch.
  *bytes = std::min<uint64_t>(fifo_.sizes[tail_ % fifo_.depth], fifo_.slotBytes + 1);
  return fifo_.slot(tail_);
}

void ShmRecvConnection::release() {
  ++tail_;
  fifo_.header->tail.store(tail_, std::memory_order_release);
  ringDoorbell(fifo_.bell);
}

}  // namespace transport
}  // namespace coll
