// The reduce loops, one instantiation per (element codec, operator, avg division) triple. Only
// reduce_loop_table.h includes this (once per instruction-set variant); everything else calls
// reduceCopy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/isa_namespace.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/reduce_ops.h"

#if defined(__AVX512BW__)
#include <immintrin.h>
#endif

namespace coll {
namespace kernels {
inline namespace COLL_ISA_NAMESPACE {
namespace detail {

// Copies n < 64 bytes as at most six fixed-size moves (32, 16, 8, 4, 2, 1 bytes, by the bits of
// n), which the compiler inlines: the tail of a short reduction (an 8-byte all-reduce or reduce)
// called libc's memcpy and memset, variable-length, once per source and destination, for about
// a hundred instructions of a call's few hundred.
inline void copyShort(unsigned char* d, const unsigned char* s, size_t n) {
  if (n & 32) std::memcpy(d, s, 32), d += 32, s += 32;
  if (n & 16) std::memcpy(d, s, 16), d += 16, s += 16;
  if (n & 8) std::memcpy(d, s, 8), d += 8, s += 8;
  if (n & 4) std::memcpy(d, s, 4), d += 4, s += 4;
  if (n & 2) std::memcpy(d, s, 2), d += 2, s += 2;
  if (n & 1) *d = *s;
}

template <class Codec, class Op, bool kDivide>
struct ReduceLoops {
  using Compute = typename Codec::Compute;
  using V = Vec<Compute>;
  // A chunk is one vector register of compute values.
  static constexpr size_t kChunk = Codec::kLanes;
  static constexpr size_t kChunkBytes = kChunk * sizeof(typename Codec::Storage);
  // Sources are read side by side in one pass while there are few of them. Past that, one 16 KiB
  // block at a time, one source after the other, into an accumulator kept in L1. Measured on the
  // development machine (Zen 4, float sum): one pass is faster for 3 and 8 sources at 1 and 16 MiB,
  // blocks for 16 sources in L2.
  static constexpr int kMaxStreamSources = 8;
  static constexpr size_t kBlockChunks = 16384 / kVectorBytes;

  static V finish(V x, int divisor) {
    if constexpr (kDivide) {
      return divideBy<Compute>(x, divisor);
    } else {
      return x;
    }
  }

  static V combine(V acc, const unsigned char* src) { return Op::template apply<Compute>(acc, Codec::load(src)); }

  // Up to kMaxStreamSources sources, single pass: each chunk of every source is loaded and folded
  // in a register, then stored to every destination. Loading all sources of a chunk before any
  // destination is written is what makes exact aliasing (in-place) safe. kSources is the source
  // count when it is known at compile time (1 and 2, the hot cases), 0 when it is not.
  template <int kSources>
  static void streamChunks(const unsigned char* const* srcs, int nsrcs, unsigned char* const* dsts, int ndsts,
                           size_t nchunks, int divisor) {
    // Local copies: a store through unsigned char* may alias the caller's pointer arrays, which
    // would force a reload of every pointer after every store.
    const unsigned char* s[kMaxReduceSources] = {};
    unsigned char* d[kMaxCopyDestinations] = {};
    for (int i = 0; i < nsrcs; ++i) s[i] = srcs[i];
    for (int j = 0; j < ndsts; ++j) d[j] = dsts[j];
    const size_t end = nchunks * kChunkBytes;
    auto reduceAt = [&](size_t off) {
      V x = Codec::load(s[0] + off);
      if constexpr (kSources == 2) {
        x = combine(x, s[1] + off);
      } else if constexpr (kSources == 0) {
        for (int i = 1; i < nsrcs; ++i) x = combine(x, s[i] + off);
      }
      return finish(x, divisor);
    };
    if (ndsts == 1) {
      for (size_t off = 0; off < end; off += kChunkBytes) Codec::store(reduceAt(off), d[0] + off);
      return;
    }
    for (size_t off = 0; off < end; off += kChunkBytes) {
      const V x = reduceAt(off);
      for (int j = 0; j < ndsts; ++j) Codec::store(x, d[j] + off);
    }
  }

  // More sources than that: a block of every source is folded into an L1-resident accumulator
  // before the block is written out (which keeps in-place correct).
  static void blockChunks(const unsigned char* const* srcs, int nsrcs, unsigned char* const* dsts, int ndsts,
                          size_t nchunks, int divisor) {
    const unsigned char* s[kMaxReduceSources] = {};
    unsigned char* d[kMaxCopyDestinations] = {};
    for (int i = 0; i < nsrcs; ++i) s[i] = srcs[i];
    for (int j = 0; j < ndsts; ++j) d[j] = dsts[j];
    V acc[kBlockChunks];
    for (size_t first = 0; first < nchunks; first += kBlockChunks) {
      const size_t n = std::min(kBlockChunks, nchunks - first);
      const size_t base = first * kChunkBytes;
      for (size_t c = 0; c < n; ++c) acc[c] = Codec::load(s[0] + base + c * kChunkBytes);
      for (int i = 1; i < nsrcs; ++i) {
        const unsigned char* src = s[i] + base;
        for (size_t c = 0; c < n; ++c) acc[c] = combine(acc[c], src + c * kChunkBytes);
      }
      for (size_t c = 0; c < n; ++c) acc[c] = finish(acc[c], divisor);
      for (int j = 0; j < ndsts; ++j) {
        unsigned char* dst = d[j] + base;
        for (size_t c = 0; c < n; ++c) Codec::store(acc[c], dst + c * kChunkBytes);
      }
    }
  }

  static void chunks(const unsigned char* const* srcs, int nsrcs, unsigned char* const* dsts, int ndsts, size_t nchunks,
                     int divisor) {
    if (nsrcs == 1) {
      streamChunks<1>(srcs, nsrcs, dsts, ndsts, nchunks, divisor);
    } else if (nsrcs == 2) {
      streamChunks<2>(srcs, nsrcs, dsts, ndsts, nchunks, divisor);
    } else if (nsrcs <= kMaxStreamSources) {
      streamChunks<0>(srcs, nsrcs, dsts, ndsts, nchunks, divisor);
    } else {
      blockChunks(srcs, nsrcs, dsts, ndsts, nchunks, divisor);
    }
  }

  // The last partial chunk runs through the same vector code on zero-padded copies, so tail
  // elements are computed exactly like the others and nothing past count is read or written.
  // srcAt(i) and dstAt(j) give the partial chunk's place in source i and destination j.
  template <class SrcAt, class DstAt>
  static void tail(SrcAt srcAt, int nsrcs, DstAt dstAt, int ndsts, size_t count, int divisor) {
    // Rows of at least 64 bytes so that AVX-512 can fill and drain them whole.
    static constexpr size_t kRowBytes = kChunkBytes > 64 ? kChunkBytes : 64;
    const size_t bytes = count * sizeof(typename Codec::Storage);
#if defined(__AVX512BW__)
    alignas(64) unsigned char in[kMaxReduceSources][kRowBytes];
    alignas(64) unsigned char out[kRowBytes];
    const unsigned char* s[kMaxReduceSources] = {};
    unsigned char* d[1] = {out};
    // Masked loads and stores: with variable-length memcpy and memset calls instead, a 2-float
    // sum took longer than a 64-float one.
    static_assert(kChunkBytes <= 64, "one mask covers the chunk");
    const __mmask64 mask = (uint64_t(1) << bytes) - 1;  // bytes < kChunkBytes
    for (int i = 0; i < nsrcs; ++i) {
      _mm512_store_si512(in[i], _mm512_maskz_loadu_epi8(mask, srcAt(i)));
      s[i] = in[i];
    }
    chunks(s, nsrcs, d, 1, 1, divisor);
    const __m512i result = _mm512_load_si512(out);
    for (int j = 0; j < ndsts; ++j) _mm512_mask_storeu_epi8(dstAt(j), mask, result);
#else
    // One zero-padded row at a time, folded in the order the chunk loops fold (first source, then
    // each other in turn, then the division), without their pointer arrays: for a call shorter
    // than a chunk (an 8-byte reduce) those arrays' set-up was most of the call's arithmetic.
    alignas(64) unsigned char row[kRowBytes];
    V x{};
    for (int i = 0; i < nsrcs; ++i) {
      std::memset(row, 0, kRowBytes);  // constant size: a few vector stores
      copyShort(row, srcAt(i), bytes);
      x = i == 0 ? Codec::load(row) : combine(x, row);
    }
    Codec::store(finish(x, divisor), row);
    for (int j = 0; j < ndsts; ++j) copyShort(dstAt(j), row, bytes);
#endif
  }

  static void run(const void* const* srcs, int nsrcs, void* const* dsts, int ndsts, size_t count, int divisor) {
    if (count < kChunk) {  // shorter than a chunk: the tail alone, straight from the callers' arrays
      if (count > 0)
        tail([&](int i) { return static_cast<const unsigned char*>(srcs[i]); }, nsrcs,
             [&](int j) { return static_cast<unsigned char*>(dsts[j]); }, ndsts, count, divisor);
      return;
    }
    const unsigned char* s[kMaxReduceSources] = {};
    unsigned char* d[kMaxCopyDestinations] = {};
    for (int i = 0; i < nsrcs; ++i) s[i] = static_cast<const unsigned char*>(srcs[i]);
    for (int j = 0; j < ndsts; ++j) d[j] = static_cast<unsigned char*>(dsts[j]);
    const size_t nchunks = count / kChunk;
    chunks(s, nsrcs, d, ndsts, nchunks, divisor);
    const size_t rest = count % kChunk;
    if (rest == 0) return;
    const size_t off = nchunks * kChunkBytes;
    tail([&](int i) { return s[i] + off; }, nsrcs, [&](int j) { return d[j] + off; }, ndsts, rest, divisor);
  }
};

}  // namespace detail
}  // namespace COLL_ISA_NAMESPACE
}  // namespace kernels
}  // namespace coll
