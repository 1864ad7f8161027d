#include "transport/doorbell.h"

#include <linux/futex.h>
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

}  // namespace

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
