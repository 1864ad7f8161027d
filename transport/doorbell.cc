#include "transport/doorbell.h"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace coll {
namespace transport {
namespace {

// Shared (not FUTEX_PRIVATE) futexes: the word may be mapped by several processes.
long futexCall(std::atomic<uint32_t>* word, int op, uint32_t value, const struct timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

long membarrierCall(int command) { return syscall(SYS_membarrier, command, 0, 0); }

// The kernel offers the global expedited command (4.16 on); a seccomp filter may still refuse it.
bool kernelHasGlobalExpedited() {
  static const bool has = [] {
    const long commands = membarrierCall(MEMBARRIER_CMD_QUERY);
    return commands > 0 && (commands & MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0 &&
           membarrierCall(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0;
  }();
  return has;
}

// A forked child has a memory of its own, which the kernel has not registered: it rings with the
// fence until a communicator of its own registers it.
void forgetRegistrationInChild() { detail::ringWithoutFence.store(false, std::memory_order_relaxed); }

}  // namespace

bool ringWithoutFenceIfPossible(bool enabled) {
  if (!enabled) return ringsWithoutFence();
  static const bool forkHandled = pthread_atfork(nullptr, nullptr, forgetRegistrationInChild) == 0;
  if (!forkHandled) return ringsWithoutFence();
  // The flag is the registration: up only after the kernel took it, so a sleeper's fence covers
  // every ring made without one. (Whether the kernel has the command is asked once, above.)
  if (!ringsWithoutFence() && kernelHasGlobalExpedited() &&
      membarrierCall(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0)
    detail::ringWithoutFence.store(true, std::memory_order_seq_cst);
  return ringsWithoutFence();
}

void fenceAgainstRingers() {
  // Every sleeper fences so when it can, whatever this process chose: ranks may differ in their
  // settings, and a ringer in another process may ring without a fence.
  if (kernelHasGlobalExpedited()) membarrierCall(MEMBARRIER_CMD_GLOBAL_EXPEDITED);
}

void forceRingDoorbell(Doorbell* bell) {
  bell->seq.fetch_add(1, std::memory_order_seq_cst);
  futexCall(&bell->seq, FUTEX_WAKE, INT_MAX, nullptr);
}

void sleepOnDoorbell(Doorbell* bell, uint32_t expected, int64_t timeoutNs) {
  struct timespec timeout;
  timeout.tv_sec = static_cast<time_t>(timeoutNs / 1000000000);
  timeout.tv_nsec = static_cast<long>(timeoutNs % 1000000000);
  futexCall(&bell->seq, FUTEX_WAIT, expected, &timeout);
}

}  // namespace transport
}  // namespace coll
