// The direct all-reduce, for ranks that are threads of one process (one address space, kernels
// running together), or rank processes on one GPU under MPS whose buffers the host mapped into
// each process before the launch (params.mapped): no slots and no pipeline. Every rank publishes
// its call's buffers, then each block of rank r reduces its share of chunk r straight from every
// rank's input and writes the result straight into every rank's output (reduce_copy.cuh with n
// sources and n destinations). Every byte is read once and written once, the least traffic an
// all-reduce can make through one GPU's memory, where the ring moves each byte through a slot on
// top (docs/performance.md).
//
// Synchronization, all through the direct lines (channel_layout.h), each polled in the poller's
// own memory:
//   - entry: rank r's block 0 publishes (send, recv, epoch E) in every peer's line from r; every
//     block waits until every rank has published E: then every input is ready (each rank's kernel
//     started after its earlier stream work) and every output is free to be written;
//   - exit: each block marks itself done (epoch E) in every peer's line; every block waits until
//     every block of every rank is done: no rank's kernel ends, letting its stream reuse its
//     buffers, while a peer may still read its input or write its output.
// E counts the direct calls of the rank, kept in its own line on the device, so graph replays
// count too; all ranks make the same calls, so all agree on it. Epochs only grow: a wait passes
// at E or later (a fast peer may already have published E + 1 once every block left E's exit).
// After a failure (a wait past the timeout, an abort) a rank's kernel ends while healthy peers
// may still write its output: the buffers of a failed call are undefined, as with any error.
#pragma once

#include <cstdint>

#include "kernels/cuda/device_sync.cuh"
#include "kernels/cuda/direct_share.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/reduce_copy.cuh"
#include "kernels/cuda/schedule_kernel.cuh"  // kKernelThreads: one block size for every kernel

namespace coll {
namespace device {

__device__ __forceinline__ bool epochReached(uint32_t value, uint32_t epoch) {
  return static_cast<int32_t>(value - epoch) >= 0;
}

__device__ __forceinline__ DirectLine* directLineIn(char* region) {
  return reinterpret_cast<DirectLine*>(region + directLineOffset());
}

__device__ __forceinline__ uint64_t loadVolatile64(const uint64_t* word) {
  return *reinterpret_cast<const volatile uint64_t*>(word);
}
__device__ __forceinline__ void storeVolatile64(uint64_t* word, uint64_t value) {
  *reinterpret_cast<volatile uint64_t*>(word) = value;
}

// Spins until *word reaches `epoch`; false (and the error recorded) when the wait expired.
__device__ __forceinline__ bool waitForEpoch(const uint32_t* word, uint32_t epoch, const WaitBound& bound,
                                             uint32_t peer) {
  WaitClock clock;
  while (!epochReached(loadVolatile(word), epoch))
    if (waitExpired(bound, clock, peer)) return false;
  return true;
}

// The exit's waits: one thread per (rank, block) pair.
static_assert(kMaxDevicePeers * kDirectMaxBlocks <= kKernelThreads, "a thread per awaited done mark");

template <typename T, typename Op>
__global__ void __launch_bounds__(kKernelThreads) directAllReduceKernel(const __grid_constant__ DirectParams params) {
  static_assert(16 % sizeof(T) == 0, "shares are cut at 16-byte packs of whole elements");
  __shared__ int failed;
  __shared__ uint32_t epoch;
  __shared__ const char* sends[kMaxDevicePeers];
  __shared__ char* recvs[kMaxDevicePeers];
  const uint32_t n = params.nranks;
  const WaitBound bound{params.timeoutNs, params.status, 0};
  if (threadIdx.x == 0) {
    failed = loadVolatile(&params.status->error) != kDeviceOk ? 1 : 0;
    // The previous direct call of this rank ended before this kernel started (stream order), so
    // every block reads the same count; block 0 advances it only after the exit below.
    epoch = loadVolatile(&directLineIn(params.peers[params.rank].recv)->epoch) + 1;
  }
  __syncthreads();
  if (failed) return;
  const uint32_t e = epoch;

  // Entry.
  if (blockIdx.x == 0 && threadIdx.x < n) {
    DirectLine* line = directLineIn(params.peers[threadIdx.x].send);
    storeVolatile64(&line->send, reinterpret_cast<uint64_t>(params.sendBuffer));
    storeVolatile64(&line->recv, reinterpret_cast<uint64_t>(params.recvBuffer));
    __threadfence_system();  // the buffers before the epoch (a peer may be another GPU's thread)
    storeVolatile(&line->published, e);
  }
  if (threadIdx.x < n) {
    DirectLine* line = directLineIn(params.peers[threadIdx.x].recv);
    if (waitForEpoch(&line->published, e, bound, threadIdx.x)) {
      __threadfence_system();  // pairs with the publisher's: its buffers' addresses after the epoch
      sends[threadIdx.x] =
          params.mapped ? params.mappedSends[threadIdx.x] : reinterpret_cast<const char*>(loadVolatile64(&line->send));
      recvs[threadIdx.x] =
          params.mapped ? params.mappedRecvs[threadIdx.x] : reinterpret_cast<char*>(loadVolatile64(&line->recv));
    } else {
      failed = 1;
    }
  }
  __syncthreads();
  if (failed) return;

  // This block's share of this rank's chunk, from every input into every output.
  const DirectShare share = directShare(params.count, sizeof(T), params.rank, n, blockIdx.x, gridDim.x);
  if (share.end > share.begin) {
    ReduceCopyArgs a;
    const uint64_t offset = share.begin * sizeof(T);
    for (uint32_t q = 0; q < n; ++q) {
      a.srcs[q] = sends[q] + offset;
      a.dsts[q] = recvs[q] + offset;
    }
    a.nsrcs = static_cast<int>(n);
    a.ndsts = static_cast<int>(n);
    a.count = share.end - share.begin;
    a.divisor = params.avgDivisor;
    reduceCopy<T, Op>(a, threadIdx.x, blockDim.x);
  }

  // Exit: this block's writes (every thread's, ordered before the barrier) before its done marks:
  // the fence after the barrier is cumulative, as in device_sync.cuh.
  __syncthreads();
  if (threadIdx.x < n) {
    __threadfence_system();
    storeVolatile(&directLineIn(params.peers[threadIdx.x].send)->done[blockIdx.x], e);
  }
  if (threadIdx.x < n * gridDim.x) {
    const uint32_t peer = threadIdx.x / gridDim.x;
    const uint32_t block = threadIdx.x % gridDim.x;
    if (!waitForEpoch(&directLineIn(params.peers[peer].recv)->done[block], e, bound, peer)) failed = 1;
  }
  __syncthreads();
  if (blockIdx.x == 0 && threadIdx.x == 0 && !failed) {
    __threadfence();
    storeVolatile(&directLineIn(params.peers[params.rank].recv)->epoch, e);
  }
}

}  // namespace device
}  // namespace coll
