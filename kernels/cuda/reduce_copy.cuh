// The device reduceCopy: dsts[j][i] = srcs[0][i] op ... op srcs[nsrcs-1][i] for i < count, by the
// threads of one block, the device analogue of kernels/cpu/reduce.h.
//
// The body moves 16-byte packs. Every thread's packs sit at multiples of 16 bytes from each
// pointer, so whether a pointer is 16-byte aligned is one uniform branch per pointer: aligned
// pointers take single 16-byte loads and stores, the others element loads (byte loads when not
// even element-aligned). The last partial pack runs element by element. Loads bypass L1
// (ld.global.cg): slots are rewritten by other blocks and processes during a kernel, and L1 is not
// coherent with their writes. In place (a destination equal to a source) is safe: a thread loads
// every source of an element before it stores it.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/cuda/reduce_functors.h"

namespace coll {
namespace device {

constexpr int kMaxReduceSources = kMaxDevicePeers + 1;
constexpr int kMaxReduceDestinations = kMaxDevicePeers + 1;

// N bytes from p through L2 only; p needs no alignment.
template <int N>
__device__ __forceinline__ void loadBytes(const char* p, void* out) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  if constexpr (N == 1) {
    *static_cast<unsigned char*>(out) = __ldcg(reinterpret_cast<const unsigned char*>(p));
    return;
  } else {
    if (address % N == 0) {
      if constexpr (N == 2) {
        *static_cast<unsigned short*>(out) = __ldcg(reinterpret_cast<const unsigned short*>(p));
      } else if constexpr (N == 4) {
        *static_cast<unsigned int*>(out) = __ldcg(reinterpret_cast<const unsigned int*>(p));
      } else if constexpr (N == 8) {
        *static_cast<unsigned long long*>(out) = __ldcg(reinterpret_cast<const unsigned long long*>(p));
      } else {
        *static_cast<uint4*>(out) = __ldcg(reinterpret_cast<const uint4*>(p));
      }
      return;
    }
    unsigned char bytes[N];
#pragma unroll
    for (int i = 0; i < N; ++i) bytes[i] = __ldcg(reinterpret_cast<const unsigned char*>(p + i));
    memcpy(out, bytes, N);
  }
}

template <int N>
__device__ __forceinline__ void storeBytes(char* p, const void* in) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  if (address % N == 0) {
    if constexpr (N == 1) {
      *reinterpret_cast<unsigned char*>(p) = *static_cast<const unsigned char*>(in);
    } else if constexpr (N == 2) {
      *reinterpret_cast<unsigned short*>(p) = *static_cast<const unsigned short*>(in);
    } else if constexpr (N == 4) {
      *reinterpret_cast<unsigned int*>(p) = *static_cast<const unsigned int*>(in);
    } else if constexpr (N == 8) {
      *reinterpret_cast<unsigned long long*>(p) = *static_cast<const unsigned long long*>(in);
    } else {
      *reinterpret_cast<uint4*>(p) = *static_cast<const uint4*>(in);
    }
    return;
  }
  memcpy(p, in, N);
}

// One 16-byte pack of T, read from or written to a pointer of any alignment: whole when aligned,
// else element by element.
template <typename T>
struct Pack16 {
  static constexpr int kElems = 16 / sizeof(T);
  union {
    uint4 raw;
    T elems[kElems];
  };
  __device__ __forceinline__ void load(const char* p, bool aligned) {
    if (aligned) {
      raw = __ldcg(reinterpret_cast<const uint4*>(p));
      return;
    }
#pragma unroll
    for (int i = 0; i < kElems; ++i) loadBytes<sizeof(T)>(p + i * sizeof(T), &elems[i]);
  }
  __device__ __forceinline__ void store(char* p, bool aligned) const {
    if (aligned) {
      *reinterpret_cast<uint4*>(p) = raw;
      return;
    }
#pragma unroll
    for (int i = 0; i < kElems; ++i) storeBytes<sizeof(T)>(p + i * sizeof(T), &elems[i]);
  }
};

struct ReduceCopyArgs {
  const char* srcs[kMaxReduceSources];
  char* dsts[kMaxReduceDestinations];
  int nsrcs;
  int ndsts;
  uint64_t count;  // elements
  int divisor;     // > 0: avg's division at the store
};

// kPacks packs at byteOffset + k * packStride: every source of every pack is loaded before the
// first store, so the loads of all packs are in flight together.
template <typename T, typename Op, int kPacks>
__device__ __forceinline__ void reducePacksAt(const ReduceCopyArgs& a, uint64_t byteOffset, uint64_t packStride,
                                              unsigned srcAligned, unsigned dstAligned) {
  PackReducer<T, Op, Pack16<T>::kElems> reducer[kPacks];
  Pack16<T> pack[kPacks];
#pragma unroll
  for (int k = 0; k < kPacks; ++k) pack[k].load(a.srcs[0] + byteOffset + k * packStride, srcAligned & 1u);
#pragma unroll
  for (int k = 0; k < kPacks; ++k) reducer[k].first(pack[k].elems);
  for (int s = 1; s < a.nsrcs; ++s) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) pack[k].load(a.srcs[s] + byteOffset + k * packStride, (srcAligned >> s) & 1u);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) reducer[k].fold(pack[k].elems);
  }
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    reducer[k].finish(a.divisor);
    reducer[k].store(pack[k].elems);
  }
  for (int d = 0; d < a.ndsts; ++d) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) pack[k].store(a.dsts[d] + byteOffset + k * packStride, (dstAligned >> d) & 1u);
  }
}

template <typename T, typename Op>
__device__ __forceinline__ void reduceElementAt(const ReduceCopyArgs& a, uint64_t byteOffset) {
  PackReducer<T, Op, 1> reducer;
  T element;
  loadBytes<sizeof(T)>(a.srcs[0] + byteOffset, &element);
  reducer.first(&element);
  for (int s = 1; s < a.nsrcs; ++s) {
    loadBytes<sizeof(T)>(a.srcs[s] + byteOffset, &element);
    reducer.fold(&element);
  }
  reducer.finish(a.divisor);
  reducer.store(&element);
  for (int d = 0; d < a.ndsts; ++d) storeBytes<sizeof(T)>(a.dsts[d] + byteOffset, &element);
}

// Run by every thread of the block (tid in [0, nthreads)); no synchronization inside.
template <typename T, typename Op>
__device__ void reduceCopy(const ReduceCopyArgs& a, unsigned tid, unsigned nthreads) {
  if (a.count == 0 || a.nsrcs < 1 || a.ndsts < 1) return;
  unsigned srcAligned = 0, dstAligned = 0;
  for (int s = 0; s < a.nsrcs; ++s)
    if (reinterpret_cast<uintptr_t>(a.srcs[s]) % 16 == 0) srcAligned |= 1u << s;
  for (int d = 0; d < a.ndsts; ++d)
    if (reinterpret_cast<uintptr_t>(a.dsts[d]) % 16 == 0) dstAligned |= 1u << d;
  constexpr int kElems = Pack16<T>::kElems;
  const uint64_t packs = a.count / kElems;
  // Eight packs per thread per round keep several loads of each source in flight (128 bytes per
  // thread: a 256 KiB slot share is a few rounds of a 512-thread block). COLL_REDUCE_UNROLL
  // overrides it at build time, to measure.
#ifdef COLL_REDUCE_UNROLL
  constexpr int kUnroll = COLL_REDUCE_UNROLL;
#else
  constexpr int kUnroll = 8;
#endif
  const uint64_t stride = uint64_t(nthreads) * kUnroll;
  uint64_t p = tid;
  for (; p + (kUnroll - 1) * nthreads < packs; p += stride)
    reducePacksAt<T, Op, kUnroll>(a, p * 16, uint64_t(nthreads) * 16, srcAligned, dstAligned);
  for (; p < packs; p += nthreads) reducePacksAt<T, Op, 1>(a, p * 16, 0, srcAligned, dstAligned);
  for (uint64_t i = packs * kElems + tid; i < a.count; i += nthreads) reduceElementAt<T, Op>(a, i * sizeof(T));
}

}  // namespace device
}  // namespace coll
