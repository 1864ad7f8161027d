// Host-side data-moving arithmetic: copy and reduce over N sources into M destinations for every
// element type and op. The transports and the executor call only this.
#pragma once

#include <cstddef>
#include <cstring>

#include "collective.h"

namespace coll {
namespace kernels {

constexpr int kMaxReduceSources = 16;
constexpr int kMaxCopyDestinations = 8;
constexpr size_t kLibcCopyMaxBytes = 256;  // copyBytes

// Element size in bytes of a datatype (0 for an out-of-range value).
size_t dataTypeSize(collDataType_t type);
const char* dataTypeName(collDataType_t type);
const char* redOpName(collRedOp_t op);

// dsts[j][i] = srcs[0][i] op srcs[1][i] op ... op srcs[nsrcs-1][i] for every destination j and
// i < count. With nsrcs == 1 it is a copy. collAvg reduces as a sum; when avgDivisor > 0 the
// result is divided by it before it is stored (integers: C division of the wrapped sum; half and
// bfloat16: computed in float and rounded to nearest even once). Sources and destinations may
// alias exactly (in-place) but must not partially overlap. Pointers need no particular alignment.
// 1 <= nsrcs <= kMaxReduceSources, 1 <= ndsts <= kMaxCopyDestinations.
void reduceCopy(collDataType_t type, collRedOp_t op, const void* const* srcs, int nsrcs, void* const* dsts,
                int ndsts, size_t count, int avgDivisor);

// Convenience forms.
inline void copyBytes(void* dst, const void* src, size_t bytes) {
  // A few cache lines (the one-shot calls' blocks): the C library's copy is a handful of
  // instructions, where the table's dispatch would cost more than the bytes.
  if (bytes <= kLibcCopyMaxBytes) {
    memmove(dst, src, bytes);
    return;
  }
  const void* srcs[1] = {src};
  void* dsts[1] = {dst};
  reduceCopy(collUint8, collSum, srcs, 1, dsts, 1, bytes, 0);
}
// copyBytes, and nothing where dst is src: a rank's own block of a call in place.
inline void copyBytesUnlessSame(void* dst, const void* src, size_t bytes) {
  if (dst != src) copyBytes(dst, src, bytes);
}

}  // namespace kernels
}  // namespace coll
