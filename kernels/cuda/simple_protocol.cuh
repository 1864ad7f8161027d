// Simple: the bulk protocol. Each lane of a connection has `depth` slots of plain data and a ready
// flag per slot (1: full, 0: free), which together are the lane's head and tail. Per unit, thread
// 0 waits until every received slot is full and every slot to send into is free; then the whole
// block runs one reduceCopy from the received slots and the local source into the local
// destination and the send slots; then thread 0 marks the sent slots full and the received ones
// free. A slot is written by one block and read by one block, so there is no other contention.
#pragma once

#include <cstdint>

#include "kernels/cuda/reduce_copy.cuh"
#include "kernels/cuda/unit.cuh"

namespace coll {
namespace device {

__device__ __forceinline__ uint32_t* simpleFlag(char* region, uint32_t lane, uint32_t slot) {
  return reinterpret_cast<uint32_t*>(region + simpleFlagOffset(lane, slot));
}
__device__ __forceinline__ char* simpleSlot(char* region, uint32_t lane, uint32_t slot) {
  return region + simpleSlotOffset(lane, slot);
}
// A received slot: where the channels say the slots are read from (channel_layout.h).
__device__ __forceinline__ char* simpleRecvSlot(const PeerChannels& peer, uint32_t lane, uint32_t slot) {
  return peer.recvSlots + simpleSlotInSlots(lane, slot);
}

// Flags: release stores and acquire polls (COLL_FLAG_RELEASE=1, the default), or a full system
// fence before volatile stores (0); selectable at build time to measure both (docs/cuda.md).
#ifndef COLL_FLAG_RELEASE
#define COLL_FLAG_RELEASE 1
#endif
__device__ __forceinline__ bool waitSimpleFlag(const uint32_t* word, uint32_t value, const WaitBound& bound,
                                               uint32_t peer) {
  return waitForValue<COLL_FLAG_RELEASE != 0>(word, value, bound, peer);
}

// Thread 0: waits for this unit's slots; false when a wait expired.
__device__ __forceinline__ bool waitSimpleSlots(const Unit& u, uint32_t lane) {
  const DeviceStep& st = *u.step;
  const PeerChannels* peers = u.params->peers;
  const uint32_t depth = kSimpleGeometry.depth;
  for (int i = 0; i < st.nrecv; ++i) {
    const uint32_t slot = slotOf(st.recvSeq[i], u.slice, depth);
    if (!waitSimpleFlag(simpleFlag(peers[st.recvPeers[i]].recv, lane, slot), 1u, u.bound, st.recvPeers[i])) return false;
  }
  for (int i = 0; i < st.nsend; ++i) {
    const uint32_t slot = slotOf(st.sendSeq[i], u.slice, depth);
    if (!waitSimpleFlag(simpleFlag(peers[st.sendPeers[i]].send, lane, slot), 0u, u.bound, st.sendPeers[i])) return false;
  }
  return true;
}

template <typename T, typename Op>
__device__ void runSimpleUnit(const Unit& u) {
  const DeviceStep& st = *u.step;
  const LaunchParams& params = *u.params;
  const uint32_t lane = blockIdx.x;
  const uint32_t depth = kSimpleGeometry.depth;
  // Only thread 0 reads *u.failed; the block decides together (__syncthreads_or), so no thread
  // leaves a unit whose __syncthreads the others still reach.
  int failedHere = 0;
  if (threadIdx.x == 0) {
    failedHere = *u.failed != 0 || !waitSimpleSlots(u, lane);
    if (failedHere) *u.failed = 1;
    __threadfence();
  }
  if (__syncthreads_or(failedHere)) return;

  ReduceCopyArgs a;
  a.nsrcs = 0;
  a.ndsts = 0;
  for (int i = 0; i < st.nrecv; ++i)
    a.srcs[a.nsrcs++] = simpleRecvSlot(params.peers[st.recvPeers[i]], lane, slotOf(st.recvSeq[i], u.slice, depth));
  for (int i = 0; i < st.nsend; ++i)
    a.dsts[a.ndsts++] = simpleSlot(params.peers[st.sendPeers[i]].send, lane, slotOf(st.sendSeq[i], u.slice, depth));
  char* src = localPointer(params, st.srcBuffer, st.srcOffset, u.range.begin, sizeof(T));
  char* dst = localPointer(params, st.dstBuffer, st.dstOffset, u.range.begin, sizeof(T));
  if (src != nullptr) a.srcs[a.nsrcs++] = src;
  if (dst != nullptr) a.dsts[a.ndsts++] = dst;
  a.count = u.range.end - u.range.begin;
  a.divisor = (st.flags & kStepFinalAvg) ? params.avgDivisor : 0;
  reduceCopy<T, Op>(a, threadIdx.x, blockDim.x);
  __syncthreads();

  if (threadIdx.x == 0) {
#if COLL_FLAG_RELEASE
    for (int i = 0; i < st.nsend; ++i)
      storeReleaseSystem(simpleFlag(params.peers[st.sendPeers[i]].send, lane, slotOf(st.sendSeq[i], u.slice, depth)), 1u);
    for (int i = 0; i < st.nrecv; ++i)
      storeReleaseSystem(simpleFlag(params.peers[st.recvPeers[i]].recv, lane, slotOf(st.recvSeq[i], u.slice, depth)), 0u);
#else
    __threadfence_system();
    for (int i = 0; i < st.nsend; ++i)
      storeVolatile(simpleFlag(params.peers[st.sendPeers[i]].send, lane, slotOf(st.sendSeq[i], u.slice, depth)), 1u);
    for (int i = 0; i < st.nrecv; ++i)
      storeVolatile(simpleFlag(params.peers[st.recvPeers[i]].recv, lane, slotOf(st.recvSeq[i], u.slice, depth)), 0u);
#endif
  }
}

}  // namespace device
}  // namespace coll
