// A rank's doorbell: the one word its executor sleeps on when no connection can move. Peers ring
// it after they post data or release a slot. It lives in shared memory (shm transport) or in
// process memory (threads, progress threads), and uses a futex either way.
//
// Lost wake-ups are excluded by the order of operations: the sleeper raises `sleeping`, re-checks
// its connections, then futex-waits on `seq` with the value it read before the re-check; a ringer
// publishes its data, then (after a full fence) reads `sleeping`, and only when it is raised bumps
// `seq` and wakes. Either the sleeper's re-check sees the data or the ringer sees the flag.
//
// The ringer's full fence is the protocol's one cost on the fast path, and not a small one: it
// waits until the store of the data has taken the line from the peer's cache (a cross-core
// hand-off) before the ringer may go on, once per send and once per release (measurably slower
// 8-byte calls: docs/performance.md, "Defaults, and the measurement behind each"). Where the kernel
// has membarrier's global expedited command, the fence moves to the sleeper, the rare side: every
// process that rings registers for the command and rings with a compiler barrier only, and the
// sleeper, after raising `sleeping`, has the kernel run a full fence on every CPU that runs a
// thread of a registered process (fenceAgainstRingers). A ringer's read of `sleeping` then either
// comes after that fence, which saw the flag raised, or its store of the data came before it and
// is visible to the sleeper's re-check. Without the command both sides fence as before.
#pragma once

#include <atomic>
#include <cstdint>

namespace coll {
namespace transport {

// What the doorbell's owner is doing, for its peers' timeout messages (docs/errors.md): written by
// the owner alone, on a line of its own (a relaxed store per collective, and one per look at its
// peers while it sleeps), read by a peer only when that peer's wait times out. A peer that has not
// begun the call, or has begun it and no longer waits on anything (stopped, stuck), is the one to
// name, not whichever rank happened to time out first.
struct alignas(64) RankActivity {
  std::atomic<uint64_t> collectivesBegun{0};  // this communicator's collective calls begun
  std::atomic<int64_t> waitingAtNs{0};        // monotonicNs() at its last look while it waited
};

struct alignas(64) Doorbell {
  std::atomic<uint32_t> seq{0};
  char padSeq[60];
  std::atomic<uint32_t> sleeping{0};
  char padSleeping[60];
  RankActivity activity;
};
static_assert(sizeof(Doorbell) == 192, "doorbell fields sit on separate cache lines");

// Wakes the owner whether or not it announced sleep (abort, errors).
void forceRingDoorbell(Doorbell* bell);

// Registers this process for membarrier's global expedited command, once, unless `enabled` is
// false; from then on its threads ring without a fence (see above). Whether they do is a property
// of the process, as the kernel's registration is: the one piece of process-wide state here (a
// communicator made with `enabled` false leaves an earlier one's choice as it is). A forked child
// starts out ringing with the fence: the kernel does not carry the registration over. Returns
// whether this process rings without a fence.
bool ringWithoutFenceIfPossible(bool enabled);
namespace detail {
inline std::atomic<bool> ringWithoutFence{false};  // set by ringWithoutFenceIfPossible only
}  // namespace detail
// Whether this process rings without a fence: one relaxed load on every ring.
inline bool ringsWithoutFence() { return detail::ringWithoutFence.load(std::memory_order_relaxed); }
// The sleeper's side: call after raising `sleeping`, before the re-check. Makes the kernel fence
// every running thread of every registered process; nothing where the kernel lacks the command
// (no process could register then, and every ringer fences).
void fenceAgainstRingers();
// Wakes the owner if it sleeps. Call after the data it should see is published. Inline: every
// small call rings its peers.
inline void ringDoorbell(Doorbell* bell) {
  if (ringsWithoutFence()) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  if (bell->sleeping.load(std::memory_order_relaxed) != 0) forceRingDoorbell(bell);
}
// Sleeps until seq differs from `expected`, the doorbell is rung, or timeoutNs passes.
void sleepOnDoorbell(Doorbell* bell, uint32_t expected, int64_t timeoutNs);

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace transport
}  // namespace coll
