#include "src/exec/peer_calls.h"

#include <algorithm>

#include "src/call_tag.h"

namespace coll {
namespace {

constexpr uint64_t kRing = transport::NativeArea::kCallRecords;

// The tag `area`'s rank recorded for call `index`, or 0 when it has not begun that call or its
// entry holds, or may soon hold, a later call's.
uint64_t recordedTag(const transport::NativeArea* area, uint64_t index) {
  if (index == 0 || area->calls.recorded.load(std::memory_order_acquire) < index) return 0;
  const uint64_t tag = area->calls.tags[index % kRing].load(std::memory_order_relaxed);
  // The owner may have moved on and rewritten the entry meanwhile: the tag counts only if the
  // count, read after it, still leaves the entry to this call.
  std::atomic_thread_fence(std::memory_order_acquire);
  if (area->calls.recorded.load(std::memory_order_relaxed) >= index + kRing - 1) return 0;
  return tag;
}

}  // namespace

PeerCalls::PeerCalls(transport::LocalMemory& memory, int rank, int nranks) : rank_(rank) {
  for (int r = 0; r < nranks; ++r) areas_.push_back(memory.area(r));
  mine_ = areas_[rank];
}

uint64_t PeerCalls::peerTag(int peer) const { return recordedTag(areas_[peer], index_); }

void PeerCalls::compare(int peer, uint64_t index) const {
  const uint64_t mine = recordedTag(mine_, index);
  const uint64_t theirs = recordedTag(areas_[peer], index);
  if (mine != 0 && theirs != 0 && mine != theirs) throwTagMismatch(peer, theirs, rank_, mine);
}

void PeerCalls::check() const {
  // Every call both this rank and a peer still hold a record of, not only the current one: a rank
  // whose count was zero returned from that call at once, and the two may now wait in a later
  // call that agrees (a barrier), each for the other, for ever.
  const uint64_t first = index_ > kRing - 2 ? index_ - (kRing - 2) : 1;
  for (int p = 0; p < static_cast<int>(areas_.size()); ++p)
    if (p != rank_)
      for (uint64_t i = first; i <= index_; ++i) compare(p, i);
}

void PeerCalls::checkSinceLastBarrier() {
  // Calls further back than the ring holds were compared by nobody: the ring's worth is what is left.
  const uint64_t after = std::max(checkedThrough_, index_ > kRing - 1 ? index_ - (kRing - 1) : 0);
  for (int p = 0; p < static_cast<int>(areas_.size()); ++p)
    if (p != rank_)
      for (uint64_t i = after + 1; i <= index_; ++i) compare(p, i);
  checkedThrough_ = index_;
}

}  // namespace coll
