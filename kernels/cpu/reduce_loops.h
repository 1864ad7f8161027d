// The reduce loops, one instantiation per (element codec, operator, avg division) triple. Only
// reduce.cc includes this; everything else calls reduceCopy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/cpu/reduce.h"
#include "kernels/cpu/reduce_ops.h"

namespace coll {
namespace kernels {
namespace detail {

template <class Codec, class Op, bool kDivide>
struct ReduceLoops {
  using Compute = typename Codec::Compute;
  using V = Vec<Compute>;
  // A chunk is one vector register of compute values.
  static constexpr size_t kChunk = Codec::kLanes;
  static constexpr size_t kChunkBytes = kChunk * sizeof(typename Codec::Storage);
  // Three or more sources are folded into a 16 KiB accumulator one source at a time: each source
  // is then read as a long sequential stream (which the prefetchers follow) while the accumulator
  // stays in L1.
  static constexpr size_t kBlockChunks = 16384 / kVectorBytes;

  static V finish(V x, int divisor) {
    if constexpr (kDivide) {
      return divideBy<Compute>(x, divisor);
    } else {
      return x;
    }
  }

  static V combine(V acc, const unsigned char* src) {
    return Op::template apply<Compute>(acc, Codec::load(src));
  }

  // One or two sources, single pass. Each chunk of every source is loaded before any destination
  // is written, which is what makes exact aliasing (in-place) safe.
  template <int kSources>
  static void streamChunks(const unsigned char* const* srcs, unsigned char* const* dsts, int ndsts,
                           size_t nchunks, int divisor) {
    // Local copies: a store through unsigned char* may alias the caller's pointer arrays, which
    // would force a reload of every pointer after every store.
    const unsigned char* a = srcs[0];
    const unsigned char* b = kSources == 2 ? srcs[1] : nullptr;
    if (ndsts == 1) {
      unsigned char* d = dsts[0];
      for (size_t off = 0; off < nchunks * kChunkBytes; off += kChunkBytes) {
        V x = Codec::load(a + off);
        if constexpr (kSources == 2) x = combine(x, b + off);
        Codec::store(finish(x, divisor), d + off);
      }
      return;
    }
    unsigned char* d[kMaxCopyDestinations] = {};
    std::copy(dsts, dsts + ndsts, d);
    for (size_t off = 0; off < nchunks * kChunkBytes; off += kChunkBytes) {
      V x = Codec::load(a + off);
      if constexpr (kSources == 2) x = combine(x, b + off);
      x = finish(x, divisor);
      for (int j = 0; j < ndsts; ++j) Codec::store(x, d[j] + off);
    }
  }

  // Three or more sources. A block of every source is folded in before the block is written out,
  // which keeps in-place correct.
  static void blockChunks(const unsigned char* const* srcs, int nsrcs, unsigned char* const* dsts,
                          int ndsts, size_t nchunks, int divisor) {
    const unsigned char* s[kMaxReduceSources] = {};
    unsigned char* d[kMaxCopyDestinations] = {};
    std::copy(srcs, srcs + nsrcs, s);
    std::copy(dsts, dsts + ndsts, d);
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

  static void chunks(const unsigned char* const* srcs, int nsrcs, unsigned char* const* dsts, int ndsts,
                     size_t nchunks, int divisor) {
    if (nsrcs == 1) {
      streamChunks<1>(srcs, dsts, ndsts, nchunks, divisor);
    } else if (nsrcs == 2) {
      streamChunks<2>(srcs, dsts, ndsts, nchunks, divisor);
    } else {
      blockChunks(srcs, nsrcs, dsts, ndsts, nchunks, divisor);
    }
  }

  // The last partial chunk runs through the same vector code on zero-padded copies, so tail
  // elements are computed exactly like the others and nothing past count is read or written.
  static void tail(const unsigned char* const* srcs, int nsrcs, unsigned char* const* dsts, int ndsts,
                   size_t count, int divisor) {
    unsigned char in[kMaxReduceSources][kChunkBytes];
    unsigned char out[kChunkBytes];
    const unsigned char* s[kMaxReduceSources] = {};
    unsigned char* d[1] = {out};
    const size_t bytes = count * sizeof(typename Codec::Storage);
    for (int i = 0; i < nsrcs; ++i) {
      std::memcpy(in[i], srcs[i], bytes);
      std::memset(in[i] + bytes, 0, kChunkBytes - bytes);
      s[i] = in[i];
    }
    chunks(s, nsrcs, d, 1, 1, divisor);
    for (int j = 0; j < ndsts; ++j) std::memcpy(dsts[j], out, bytes);
  }

  static void run(const void* const* srcs, int nsrcs, void* const* dsts, int ndsts, size_t count, int divisor) {
    const unsigned char* s[kMaxReduceSources] = {};
    unsigned char* d[kMaxCopyDestinations] = {};
    for (int i = 0; i < nsrcs; ++i) s[i] = static_cast<const unsigned char*>(srcs[i]);
    for (int j = 0; j < ndsts; ++j) d[j] = static_cast<unsigned char*>(dsts[j]);
    const size_t nchunks = count / kChunk;
    chunks(s, nsrcs, d, ndsts, nchunks, divisor);
    const size_t rest = count % kChunk;
    if (rest == 0) return;
    const size_t off = nchunks * kChunkBytes;
    for (int i = 0; i < nsrcs; ++i) s[i] += off;
    for (int j = 0; j < ndsts; ++j) d[j] += off;
    tail(s, nsrcs, d, ndsts, rest, divisor);
  }
};

}  // namespace detail
}  // namespace kernels
}  // namespace coll
