// LL (low latency): the protocol for small messages. A slot is a row of 8-byte lines, each 4 data
// bytes and a 4-byte flag stored together in one 64-bit store, so a receiver that sees the flag
// it expects also sees the data: no separate ready flag, no fence on the critical path. The flag of
// a slice is its sequence number on the connection plus one; a receiver clears the lines it read
// (to 0, which no flag equals), so a line left over from an earlier use never looks written. One
// credit word per slot (1: in use, 0: free) keeps a sender from overwriting lines not yet read;
// it is off the critical path. Each thread moves one 8-byte pack (two lines) at a time.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/cuda/reduce_copy.cuh"
#include "kernels/cuda/unit.cuh"

namespace coll {
namespace device {

__device__ __forceinline__ uint32_t* llCredit(char* region, uint32_t slot) {
  return reinterpret_cast<uint32_t*>(region + llCreditOffset(slot));
}
__device__ __forceinline__ uint64_t* llLines(char* region, uint32_t slot) {
  return reinterpret_cast<uint64_t*>(region + llSlotOffset(slot));
}

__device__ __forceinline__ void llStore(uint64_t* line, uint32_t data, uint32_t flag) {
  asm volatile("st.volatile.global.v2.u32 [%0], {%1, %2};" ::"l"(line), "r"(data), "r"(flag) : "memory");
}
// True when the line holds `flag`; then *data is its data word.
__device__ __forceinline__ bool llLoad(const uint64_t* line, uint32_t flag, uint32_t* data) {
  uint32_t d, f;
  asm volatile("ld.volatile.global.v2.u32 {%0, %1}, [%2];" : "=r"(d), "=r"(f) : "l"(line) : "memory");
  *data = d;
  return f == flag;
}

// Reads the two lines of one pack once they hold `flag`, then clears them; false when the wait
// expired or another thread of the block gave up.
__device__ __forceinline__ bool llReceivePack(uint64_t* lines, uint32_t flag, uint2* pack, const Unit& u,
                                              uint32_t peer) {
  WaitClock clock;
  while (!llLoad(lines, flag, &pack->x)) {
    if (*reinterpret_cast<volatile int*>(u.failed) || waitExpired(u.bound, clock, peer)) return false;
  }
  while (!llLoad(lines + 1, flag, &pack->y)) {
    if (*reinterpret_cast<volatile int*>(u.failed) || waitExpired(u.bound, clock, peer)) return false;
  }
  llStore(lines, 0, 0);
  llStore(lines + 1, 0, 0);
  return true;
}

// Thread 0: takes the credit of every slot this unit sends into; false when a wait expired.
__device__ __forceinline__ bool takeLLCredits(const Unit& u) {
  const DeviceStep& st = *u.step;
  for (int i = 0; i < st.nsend; ++i) {
    uint32_t* credit =
        llCredit(u.params->peers[st.sendPeers[i]].send, slotOf(st.sendSeq[i], u.slice, kLLGeometry.depth));
    if (!waitForValue(credit, 0u, u.bound, st.sendPeers[i])) return false;
    storeVolatile(credit, 1u);
  }
  // The credit must be visible as taken before any line is written: the receiver frees it only
  // after reading the lines.
  __threadfence_system();
  return true;
}

template <typename T, typename Op>
__device__ void runLLUnit(const Unit& u) {
  const DeviceStep& st = *u.step;
  const LaunchParams& params = *u.params;
  const uint32_t depth = kLLGeometry.depth;
  // Only thread 0 reads *u.failed for decisions; the block decides together (__syncthreads_or).
  // Other threads read it only to stop spinning early.
  int failedHere = 0;
  if (threadIdx.x == 0) {
    failedHere = *u.failed != 0 || !takeLLCredits(u);
    if (failedHere) *u.failed = 1;
  }
  if (__syncthreads_or(failedHere)) return;

  constexpr int kElems = 8 / sizeof(T);
  union Pack {
    uint2 raw;
    T elems[kElems];
  };
  const uint64_t bytes = (u.range.end - u.range.begin) * sizeof(T);
  const uint64_t packs = (bytes + 7) / 8;
  const char* src = localPointer(params, st.srcBuffer, st.srcOffset, u.range.begin, sizeof(T));
  char* dst = localPointer(params, st.dstBuffer, st.dstOffset, u.range.begin, sizeof(T));
  const int divisor = (st.flags & kStepFinalAvg) ? params.avgDivisor : 0;
  for (uint64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    const uint64_t valid = bytes - p * 8 < 8 ? bytes - p * 8 : 8;
    PackReducer<T, Op, kElems> reducer;
    Pack pack;
    bool first = true;
    bool ok = true;
    for (int i = 0; i < st.nrecv && ok; ++i) {
      char* region = params.peers[st.recvPeers[i]].recv;
      uint64_t* lines = llLines(region, slotOf(st.recvSeq[i], u.slice, depth)) + 2 * p;
      ok = llReceivePack(lines, static_cast<uint32_t>(st.recvSeq[i] + u.slice + 1), &pack.raw, u, st.recvPeers[i]);
      if (first) {
        reducer.first(pack.elems);
      } else {
        reducer.fold(pack.elems);
      }
      first = false;
    }
    if (!ok) {
      *reinterpret_cast<volatile int*>(u.failed) = 1;
      failedHere = 1;
      break;
    }
    if (src != nullptr) {
      // The last pack may be partial: its missing bytes are zero and never stored.
      pack.raw = make_uint2(0, 0);
      if (valid == 8) {
        loadBytes<8>(src + p * 8, &pack.raw);
      } else {
        for (uint64_t b = 0; b < valid; ++b) loadBytes<1>(src + p * 8 + b, reinterpret_cast<char*>(&pack.raw) + b);
      }
      if (first) {
        reducer.first(pack.elems);
      } else {
        reducer.fold(pack.elems);
      }
    }
    reducer.finish(divisor);
    reducer.store(pack.elems);
    for (int i = 0; i < st.nsend; ++i) {
      const uint32_t slot = slotOf(st.sendSeq[i], u.slice, depth);
      uint64_t* lines = llLines(params.peers[st.sendPeers[i]].send, slot) + 2 * p;
      const uint32_t flag = static_cast<uint32_t>(st.sendSeq[i] + u.slice + 1);
      llStore(lines, pack.raw.x, flag);
      llStore(lines + 1, pack.raw.y, flag);
    }
    if (dst != nullptr) {
      if (valid == 8) {
        storeBytes<8>(dst + p * 8, &pack.raw);
      } else {
        memcpy(dst + p * 8, &pack.raw, valid);
      }
    }
  }
  const int anyFailed = __syncthreads_or(failedHere);
  if (threadIdx.x == 0) {
    if (anyFailed) {
      *u.failed = 1;
    } else {
      // The lines were read and cleared: hand the slots back to their senders.
      __threadfence_system();
      for (int i = 0; i < st.nrecv; ++i)
        storeVolatile(llCredit(params.peers[st.recvPeers[i]].recv, slotOf(st.recvSeq[i], u.slice, depth)), 0u);
    }
  }
}

}  // namespace device
}  // namespace coll
