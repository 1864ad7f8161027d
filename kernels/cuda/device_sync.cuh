// Waiting and signalling between blocks of different kernels (and processes): volatile flag words,
// waits bounded by a deadline and by the host's abort request, error reports to the host, and the
// barrier that lines up the lanes of one launch.
//
// Ordering: a writer makes its data visible with __threadfence_system() before it sets a flag (a
// peer may sit on another GPU behind NVLink or PCIe); a reader that saw the flag issues
// __threadfence() before its block reads the data, and reads it through L2 (reduce_copy.cuh).
#pragma once

#include <cstdint>

#include "kernels/cuda/channel_layout.h"

namespace coll {
namespace device {

__device__ __forceinline__ uint64_t globalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ uint32_t loadVolatile(const uint32_t* word) {
  return *reinterpret_cast<const volatile uint32_t*>(word);
}
__device__ __forceinline__ void storeVolatile(uint32_t* word, uint32_t value) {
  *reinterpret_cast<volatile uint32_t*>(word) = value;
}

// Acquire and release at system scope: the peer writing a flag or data may be on another GPU.
// A release store by one thread after __syncthreads covers the block's earlier writes and reads
// (the barrier orders them before it, and release is cumulative in the PTX memory model), so no
// full fence.sc.sys is needed per slot.
__device__ __forceinline__ uint32_t loadAcquireSystem(const uint32_t* word) {
  uint32_t value;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(word) : "memory");
  return value;
}
__device__ __forceinline__ void storeReleaseSystem(uint32_t* word, uint32_t value) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(word), "r"(value) : "memory");
}

// Records the first error of this rank's kernels; the host reads it without synchronizing. Two
// blocks failing at once may both write: either report is true.
__device__ __forceinline__ void reportError(DeviceStatus* status, uint32_t error, uint32_t peer, uint32_t step) {
  volatile DeviceStatus* s = status;
  if (s->error != kDeviceOk) return;
  s->peer = peer;
  s->step = step;
  __threadfence_system();
  s->error = error;
}

// What bounds every wait of one block: a wait fails when its peer made no progress for
// `timeoutNs` (the wait itself lasted that long), not when the kernel has run that long: a large
// call whose every step moves along may take longer than the timeout in all.
struct WaitBound {
  uint64_t timeoutNs;
  DeviceStatus* status;
  uint32_t step;  // for the report
};

// One wait's count of polls and when it began (read lazily: the common wait never reads the
// timer).
struct WaitClock {
  uint32_t spins = 0;
  uint64_t startNs = 0;
};

// True when the wait must give up: it has waited longer than the bound or the host asked to
// abort (checked every 1024 polls, so the common case reads one word).
__device__ __forceinline__ bool waitExpired(const WaitBound& bound, WaitClock& clock, uint32_t peer) {
  if (++clock.spins % 1024 != 0) return false;
  if (loadVolatile(&bound.status->abort) != 0) {
    reportError(bound.status, kDeviceAborted, peer, bound.step);
    return true;
  }
  const uint64_t now = globalTimerNs();
  if (clock.startNs == 0) {
    clock.startNs = now;
    return false;
  }
  if (now - clock.startNs > bound.timeoutNs) {
    reportError(bound.status, kDeviceTimeout, peer, bound.step);
    return true;
  }
  return false;
}

// Spins until *word == value; false when the wait expired (the error is recorded). kAcquire
// polls with acquire loads at system scope, so what the writer did before its release of *word is
// visible after; otherwise volatile loads (the reader fences itself).
template <bool kAcquire = false>
__device__ __forceinline__ bool waitForValue(const uint32_t* word, uint32_t value, const WaitBound& bound,
                                             uint32_t peer) {
  WaitClock clock;
  while ((kAcquire ? loadAcquireSystem(word) : loadVolatile(word)) != value)
    if (waitExpired(bound, clock, peer)) return false;
  return true;
}

// All blocks of this launch meet (they are few and co-resident: one per lane). The counter only
// grows; a block's generation is its arrival count divided by the grid size, which stays exact
// because every launch that uses the counter has the same number of blocks and passes every
// barrier it starts. Called by every thread; only thread 0 reads and sets *failed (a block that
// already failed passes straight through).
__device__ __forceinline__ void laneBarrier(unsigned long long* counter, const WaitBound& bound, int* failed) {
  __syncthreads();
  if (threadIdx.x == 0 && *failed == 0) {
    __threadfence();
    const unsigned long long arrived = atomicAdd(counter, 1ull);
    const unsigned long long target = (arrived / gridDim.x + 1) * gridDim.x;
    WaitClock clock;
    while (*reinterpret_cast<volatile unsigned long long*>(counter) < target) {
      if (waitExpired(bound, clock, UINT32_MAX)) {
        *failed = 1;
        break;
      }
    }
    __threadfence();
  }
  __syncthreads();
}

}  // namespace device
}  // namespace coll
