// reduceCopy: one table lookup per call picks the loop instantiated for (type, op) in the
// instruction-set variant chosen for this CPU (host_kernels.h); copies skip the arithmetic
// entirely and go to memcpy.
#include "kernels/cpu/reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/enum_bits.h"
#include "kernels/cpu/host_kernels.h"
#include "kernels/cpu/reduce_variant.h"

namespace coll {
namespace kernels {
namespace {

constexpr size_t kTypeSizes[collNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
constexpr const char* kTypeNames[collNumTypes] = {"int8",   "uint8", "int32", "uint32", "int64",
                                                  "uint64", "half",  "float", "double", "bfloat16"};
constexpr const char* kOpNames[collNumOps] = {"sum", "prod", "max", "min", "avg"};

// With several destinations the source is copied a block at a time, so it is read from memory
// once and from L1 for the other destinations.
constexpr size_t kCopyBlockBytes = 16384;

void copyToAll(const void* src, void* const* dsts, int ndsts, size_t bytes) {
  const unsigned char* s = static_cast<const unsigned char*>(src);
  if (ndsts == 1) {
    if (dsts[0] != src) std::memcpy(dsts[0], src, bytes);
    return;
  }
  unsigned char* d[kMaxCopyDestinations] = {};
  for (int j = 0; j < ndsts; ++j) d[j] = static_cast<unsigned char*>(dsts[j]);
  for (size_t off = 0; off < bytes; off += kCopyBlockBytes) {
    const size_t n = std::min(kCopyBlockBytes, bytes - off);
    for (int j = 0; j < ndsts; ++j) {
      // memcpy onto itself is undefined; an in-place destination already holds the data.
      if (d[j] != s) std::memcpy(d[j] + off, s + off, n);
    }
  }
}

// t and o are the datatype's and op's values as the caller's bits (enumBits), unchecked so far.
void reduceWith(const ReduceLoopTable& loops, int t, int o, const void* const* srcs, int nsrcs, void* const* dsts,
                int ndsts, size_t count, int avgDivisor) {
  // Arguments are validated by the callers (the API layer); this guard only keeps a bad internal
  // call from indexing out of the table or writing anywhere.
  if (count == 0 || t < 0 || t >= collNumTypes || o < 0 || o >= collNumOps || nsrcs < 1 ||
      nsrcs > kMaxReduceSources || ndsts < 1 || ndsts > kMaxCopyDestinations) {
    return;
  }
  // Dividing by 1 changes nothing (x / 1.0 is exact in every float type), so it is a plain sum.
  const bool divides = o == collAvg && avgDivisor > 1;
  if (nsrcs == 1 && !divides) {
    // Every op over a single source is the identity.
    copyToAll(srcs[0], dsts, ndsts, count * kTypeSizes[t]);
    return;
  }
  const int column = divides ? kDividingSum : (o == collAvg ? static_cast<int>(collSum) : o);
  loops.rows[t][column](srcs, nsrcs, dsts, ndsts, count, avgDivisor);
}

}  // namespace

size_t dataTypeSize(collDataType_t type) {
  const int t = enumBits(type);
  return t >= 0 && t < collNumTypes ? kTypeSizes[t] : 0;
}

const char* dataTypeName(collDataType_t type) {
  const int t = enumBits(type);
  return t >= 0 && t < collNumTypes ? kTypeNames[t] : "unknown";
}

const char* redOpName(collRedOp_t op) {
  const int o = enumBits(op);
  return o >= 0 && o < collNumOps ? kOpNames[o] : "unknown";
}

void reduceCopy(collDataType_t type, collRedOp_t op, const void* const* srcs, int nsrcs, void* const* dsts,
                int ndsts, size_t count, int avgDivisor) {
  // The variant is chosen on the first call; after that this is one predictable branch.
  static const ReduceLoopTable& loops = *activeHostKernels().loops;
  reduceWith(loops, enumBits(type), enumBits(op), srcs, nsrcs, dsts, ndsts, count, avgDivisor);
}

void reduceCopyWith(const HostKernels& kernels, collDataType_t type, collRedOp_t op, const void* const* srcs,
                    int nsrcs, void* const* dsts, int ndsts, size_t count, int avgDivisor) {
  reduceWith(*kernels.loops, enumBits(type), enumBits(op), srcs, nsrcs, dsts, ndsts, count, avgDivisor);
}

}  // namespace kernels
}  // namespace coll
