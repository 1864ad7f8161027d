#include "transport/self/self_connection.h"

namespace coll {
namespace transport {

SelfFifo::SelfFifo(int depth, size_t slotBytes)
    : depth_(depth),
      slotBytes_(slotBytes),
      slots_(new uint8_t[static_cast<size_t>(depth) * slotBytes]),
      sizes_(depth, 0),
      tags_(depth, 0) {}

void* SelfFifo::tryAcquire() {
  if (head_ - tail_ >= static_cast<uint64_t>(depth_)) return nullptr;
  return slots_.get() + (head_ % depth_) * slotBytes_;
}

void SelfFifo::post(size_t bytes, uint64_t tag) {
  sizes_[head_ % depth_] = bytes;
  tags_[head_ % depth_] = tag;
  ++head_;
}

const void* SelfFifo::tryPeek(size_t* bytes, uint64_t* tag) {
  if (head_ == tail_) return nullptr;
  *bytes = sizes_[tail_ % depth_];
  *tag = tags_[tail_ % depth_];
  return slots_.get() + (tail_ % depth_) * slotBytes_;
}

void SelfFifo::release() { ++tail_; }

}  // namespace transport
}  // namespace coll
