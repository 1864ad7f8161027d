// The executor's offer of a destination for the frames a receive connection hands it next
// (transport.h, offerLanding), as the connection keeps it: frames first..end-1 of the
// connection's own count are the slices of totalBytes, sliceBytes each but the last.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace coll {
namespace transport {

struct LandingOffer {
  uint8_t* destination = nullptr;  // null: no offer
  size_t totalBytes = 0;
  size_t sliceBytes = 0;
  uint64_t first = 0;
  uint64_t end = 0;

  void set(void* where, size_t total, size_t slice, uint64_t firstFrame) {
    if (total == 0 || slice == 0) return;
    destination = static_cast<uint8_t*>(where);
    totalBytes = total;
    sliceBytes = slice;
    first = firstFrame;
    end = firstFrame + (total + slice - 1) / slice;
  }

  // Where frame `seq` of `bytes` goes: its place, when the offer covers it and `bytes` is the
  // size the executor expects there; else null. Sizes come from another process: a frame of any
  // other size stays in its slot, and the executor reports the mismatch.
  uint8_t* placeOf(uint64_t seq, size_t bytes) const {
    if (destination == nullptr || seq < first || seq >= end) return nullptr;
    size_t offset = static_cast<size_t>(seq - first) * sliceBytes;
    return bytes == std::min(sliceBytes, totalBytes - offset) ? destination + offset : nullptr;
  }
};

}  // namespace transport
}  // namespace coll
