#include "src/exec/peer_calls.h"

#include <algorithm>

#include "src/call_tag.h"

namespace coll {
namespace {

// Record `entry` as one consistent (index, tag) pair, or index 0 when its owner was rewriting it.
struct Snapshot {
  uint64_t index = 0;
  uint64_t tag = 0;
};
Snapshot snapshotOf(const transport::CallRecord& record) {
  Snapshot s;
  s.index = record.index.load(std::memory_order_acquire);
  s.tag = record.tag.load(std::memory_order_relaxed);
  // The owner may have moved on and rewritten the entry meanwhile: the tag counts only if the
  // index still says the same call.
  std::atomic_thread_fence(std::memory_order_acquire);
  if (record.index.load(std::memory_order_relaxed) != s.index) s.index = 0;
  return s;
}

}  // namespace

PeerCalls::PeerCalls(transport::LocalMemory& memory, int rank, int nranks) : rank_(rank) {
  for (int r = 0; r < nranks; ++r) areas_.push_back(memory.area(r));
  mine_ = areas_[rank];
}

uint64_t PeerCalls::peerTag(int peer) const {
  const Snapshot s = snapshotOf(areas_[peer]->callRecords[index_ % transport::NativeArea::kCallRecords]);
  return s.index == index_ ? s.tag : 0;
}

void PeerCalls::compare(int peer, int entry, uint64_t after) const {
  const Snapshot mine = snapshotOf(mine_->callRecords[entry]);
  if (mine.index <= after) return;
  const Snapshot theirs = snapshotOf(areas_[peer]->callRecords[entry]);
  if (mine.index == theirs.index && mine.tag != theirs.tag) throwTagMismatch(peer, theirs.tag, rank_, mine.tag);
}

void PeerCalls::check() const {
  // Every call both this rank and a peer still hold a record of, not only the current one: a rank
  // whose count was zero returned from that call at once, and the two may now wait in a later
  // call that agrees (a barrier), each for the other, for ever.
  for (int p = 0; p < static_cast<int>(areas_.size()); ++p)
    if (p != rank_)
      for (int e = 0; e < transport::NativeArea::kCallRecords; ++e) compare(p, e, 0);
}

void PeerCalls::checkSinceLastBarrier() {
  // Calls further back than the ring holds were compared by nobody: the ring's worth is what is left.
  constexpr uint64_t kRing = transport::NativeArea::kCallRecords;
  const uint64_t after = std::max(checkedThrough_, index_ > kRing ? index_ - kRing : 0);
  for (int p = 0; p < static_cast<int>(areas_.size()); ++p)
    if (p != rank_)
      for (uint64_t i = after + 1; i <= index_; ++i) compare(p, static_cast<int>(i % kRing), after);
  checkedThrough_ = index_;
}

}  // namespace coll
