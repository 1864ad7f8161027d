// Which collective each rank of a host runs, where every rank maps every other's memory: at the
// start of each collective a rank writes the call's index and tag (src/call_tag.h) into its own
// NativeArea's ring of call records, a store into a line no peer reads on the fast path.
//
// Why: ranks whose counts differ may plan different algorithms (a small count takes the one-shot
// path, a large one a FIFO ring or direct reads), and then each waits for something the other
// never does: neither sees a byte of the other's to check. So a rank that waits long (the waiter's
// health check, once it has spun and yielded: src/exec/progress.h) compares its records with its
// peers' records of the same calls, and fails at once, naming both calls, where a peer's differs.
// A count of zero is recorded too: such a call returns at once, and its peers learn of it here. The paths that read a peer's input check its tag as they read (one-shot, direct reads,
// FIFO slots); they ask the records only to name a peer's call they cannot read from its bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "transport/local_memory.h"

namespace coll {

class PeerCalls {
 public:
  PeerCalls(transport::LocalMemory& memory, int rank, int nranks);

  // Records this rank's next collective: its tag, then the count (local_memory.h, CallRecords).
  // Inline: every call makes one.
  void begin(uint64_t tag) {
    const uint64_t index = ++index_;
    transport::CallRecords<transport::NativeArea::kCallRecords>& calls = mine_->calls;
    // A reader that finds this tag then finds the count at least at the call before this one,
    // so it no longer takes the entry for the call this one replaces.
    std::atomic_thread_fence(std::memory_order_release);
    calls.tags[index % transport::NativeArea::kCallRecords].store(tag, std::memory_order_relaxed);
    calls.recorded.store(index, std::memory_order_release);
  }
  // The tag `peer` recorded for this rank's current call, or 0 when it has not begun that call
  // yet or has run on past the records the ring keeps.
  uint64_t peerTag(int peer) const;
  // Throws (collRemoteError, naming both calls) when a peer recorded one of the calls in both
  // rings with another tag than this rank did.
  void check() const;
  // The same for the calls since the last barrier that asked, once every peer has recorded them
  // (a barrier, when all have reached it): there ranks that both returned early from a call (one
  // by a count of zero, one that only sent) meet, and nothing else would compare those calls.
  void checkSinceLastBarrier();

 private:
  std::vector<transport::NativeArea*> areas_;
  transport::NativeArea* mine_;
  int rank_;
  uint64_t index_ = 0;
  uint64_t checkedThrough_ = 0;  // the last call checkSinceLastBarrier compared
  // Compares this rank's record of call `index` with the peer's, where both still hold one.
  void compare(int peer, uint64_t index) const;
};

}  // namespace coll
