// The executor's offer of a destination for the frames a receive connection hands it next
// (transport.h, offerLanding), as the connection keeps it: frames first..end-1 of the
// connection's own count are the slices of totalBytes, sliceBytes each but the last, of the call
// `tag`: a frame lands only when it carries that tag and has the size expected at its place. The verbs
// transport's sender keeps the same shape for the landing its receiver announced, with no local
// destination (it writes at an address in the receiver's memory, verbs_landing.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace coll {
namespace transport {

struct LandingOffer {
  uint8_t* destination = nullptr;  // null: no offer here (or, for a verbs sender, one that lies elsewhere)
  size_t totalBytes = 0;           // 0: no offer at all
  size_t sliceBytes = 0;
  uint64_t first = 0;
  uint64_t end = 0;
  uint64_t tag = 0;
  static constexpr size_t kNowhere = SIZE_MAX;

  void set(void* where, size_t total, size_t slice, uint64_t firstFrame, uint64_t callTag) {
    if (total == 0 || slice == 0) return;
    destination = static_cast<uint8_t*>(where);
    totalBytes = total;
    sliceBytes = slice;
    first = firstFrame;
    end = firstFrame + (total + slice - 1) / slice;
    tag = callTag;
  }

  // Where frame `seq` of `bytes` and `frameTag` goes, as an offset into the destination: when the
  // offer covers it, the frame belongs to the offer's call and `bytes` is the size the executor
  // expects there; else kNowhere. Sizes and tags come from another process: any other frame stays
  // in its slot, and the executor reports the mismatch.
  size_t offsetOf(uint64_t seq, size_t bytes, uint64_t frameTag) const {
    if (totalBytes == 0 || seq < first || seq >= end || frameTag != tag) return kNowhere;
    size_t offset = static_cast<size_t>(seq - first) * sliceBytes;
    return bytes == std::min(sliceBytes, totalBytes - offset) ? offset : kNowhere;
  }
  // The same as a place in this process's memory, or null.
  uint8_t* placeOf(uint64_t seq, size_t bytes, uint64_t frameTag) const {
    const size_t offset = offsetOf(seq, bytes, frameTag);
    return destination == nullptr || offset == kNowhere ? nullptr : destination + offset;
  }
  // Where `bytes` that stand for frames seq, seq + 1, ... (a shared-memory single copy of several
  // slices) go: when they begin at frame seq of the offer, end where one of its frames ends and
  // belong to the offer's call.
  uint8_t* placeOfFrames(uint64_t seq, size_t bytes, uint64_t frameTag) const {
    if (destination == nullptr || totalBytes == 0 || seq < first || seq >= end || bytes == 0 || frameTag != tag)
      return nullptr;
    const size_t offset = static_cast<size_t>(seq - first) * sliceBytes;
    if (bytes > totalBytes - offset || (bytes % sliceBytes != 0 && offset + bytes != totalBytes)) return nullptr;
    return destination + offset;
  }
};

}  // namespace transport
}  // namespace coll
