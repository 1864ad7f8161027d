// A host connection in process memory for the deterministic staging tests: a FIFO of `depth`
// slots of `slotBytes` with credits, as every transport's (transport/transport.h), driven from one
// thread. The sender's end and the receiver's end are the two views of one object.
#pragma once

#include <cstddef>
#include <vector>

#include "transport/transport.h"

namespace coll {
namespace staging_test {

class MemoryFifo final : public transport::SendConnection, public transport::RecvConnection {
 public:
  MemoryFifo(int depth, size_t slotBytes)
      : depth_(depth), slotBytes_(slotBytes), slots_(depth), sizes_(depth), tags_(depth) {
    for (auto& slot : slots_) slot.resize(slotBytes);
  }
  void* tryAcquire() override { return posted_ - released_ < static_cast<size_t>(depth_) ? slot(posted_) : nullptr; }
  void post(size_t bytes, uint64_t tag) override {
    tags_[posted_ % depth_] = tag;
    sizes_[posted_++ % depth_] = bytes;
  }
  size_t slotBytes() const override { return slotBytes_; }
  int depth() const override { return depth_; }
  const void* tryPeek(size_t* bytes, uint64_t* tag) override {
    if (released_ == posted_) return nullptr;
    *bytes = sizes_[released_ % depth_];
    *tag = tags_[released_ % depth_];
    return slot(released_);
  }
  void release() override { ++released_; }
  size_t inFlight() const { return posted_ - released_; }

 private:
  char* slot(size_t seq) { return slots_[seq % depth_].data(); }
  int depth_;
  size_t slotBytes_;
  std::vector<std::vector<char>> slots_;
  std::vector<size_t> sizes_;
  std::vector<uint64_t> tags_;
  size_t posted_ = 0;
  size_t released_ = 0;
};

}  // namespace staging_test
}  // namespace coll
