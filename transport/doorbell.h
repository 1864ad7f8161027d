// A rank's doorbell: the one word its executor sleeps on when no connection can move. Peers ring
// it after they post data or release a slot. It lives in shared memory (shm transport) or in
// process memory (threads, progress threads), and uses a futex either way.
//
// Lost wake-ups are excluded by the order of operations: the sleeper raises `sleeping`, re-checks
// its connections, then futex-waits on `seq` with the value it read before the re-check; a ringer
// publishes its data, then (after a full fence) reads `sleeping`, and only when it is raised bumps
// `seq` and wakes. Either the sleeper's re-check sees the data or the ringer sees the flag.
#pragma once

#include <atomic>
#include <cstdint>

namespace coll {
namespace transport {

struct alignas(64) Doorbell {
  std::atomic<uint32_t> seq{0};
  char padSeq[60];
  std::atomic<uint32_t> sleeping{0};
  char padSleeping[60];
};
static_assert(sizeof(Doorbell) == 128, "doorbell fields sit on separate cache lines");

// Wakes the owner whether or not it announced sleep (abort, errors).
void forceRingDoorbell(Doorbell* bell);
// Wakes the owner if it sleeps. Call after the data it should see is published. Inline: every
// small call rings its peers.
inline void ringDoorbell(Doorbell* bell) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
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
