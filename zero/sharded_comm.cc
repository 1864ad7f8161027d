// Gradient reduce-scatter and parameter all-gather over ranges of the flat buffer.
//
// A range that is the whole buffer is one collReduceScatter or collAllGather. Any other range (a
// bucket of gradients as backward fills it, one layer's parameters) meets at most a few shards:
// the part each owner holds is one collReduce to that owner, or one collBroadcast from it. Over
// the buckets of a step every element is still sent once per rank, as in a reduce-scatter. With a
// stream every call is ordered on it, the layer's own accumulation and copy included
// (zero/device/device_memory.h).
#include <algorithm>
#include <cstdint>

#include "collective_zero.h"
#include "common/enum_bits.h"
#include "common/error.h"
#include "kernels/cpu/reduce.h"
#include "src/api_internal.h"
#include "zero/device/device_memory.h"
#include "zero/partition.h"

namespace coll {
namespace zero {
namespace {

char* at(void* base, size_t elements, size_t elementSize) { return static_cast<char*>(base) + elements * elementSize; }
const char* at(const void* base, size_t elements, size_t elementSize) {
  return static_cast<const char*>(base) + elements * elementSize;
}

// dst[i] += src[i] in datatype, rounding once per element.
void addInto(void* dst, const void* src, size_t count, collDataType_t datatype) {
  const void* srcs[2] = {dst, src};
  void* dsts[1] = {dst};
  kernels::reduceCopy(datatype, collSum, srcs, 2, dsts, 1, count, 0);
}

// Calls visit(owner, begin, end) for each shard that [begin, begin+count) meets, in rank order.
template <typename Visit>
void forEachOwnerPiece(const collZeroPartition_t& p, size_t begin, size_t count, Visit&& visit) {
  if (count == 0 || p.shardCount == 0) return;
  const size_t end = begin + count;
  for (int owner = ownerOf(p, begin); owner < p.nranks; ++owner) {
    const size_t shardBegin = size_t(owner) * p.shardCount;
    if (shardBegin >= end) break;
    visit(owner, std::max(begin, shardBegin), std::min(end, shardBegin + p.shardCount));
  }
}

// Where the call runs: host memory (stream NULL) or device memory on `stream`, for the two steps
// the layer does itself between the collectives.
struct Place {
  const char* function;
  collStream_t stream;

  void add(void* dst, const void* src, size_t count, collDataType_t datatype) const {
    if (stream == nullptr) {
      addInto(dst, src, count, datatype);
    } else {
      addOnStream(function, dst, src, count, datatype, stream);
    }
  }
  void copy(void* dst, const void* src, size_t bytes) const {
    if (stream == nullptr) {
      kernels::copyBytesUnlessSame(dst, src, bytes);
    } else {
      copyOnStream(function, dst, src, bytes, stream);
    }
  }
};

void reduceScatterRange(void* bucket, size_t begin, size_t count, void* gradShard, int accumulate,
                        collDataType_t datatype, collRedOp_t op, const collZeroPartition_t& p, collComm_t comm,
                        const Place& place) {
  const size_t es = kernels::dataTypeSize(datatype);
  collStream_t stream = place.stream;
  if (begin == 0 && count == p.paddedCount && count > 0) {
    void* mine = at(bucket, p.shardOffset, es);
    if (!accumulate) {
      checkInnerCall(collReduceScatter(bucket, gradShard, p.shardCount, datatype, op, comm, stream));
      return;
    }
    checkInnerCall(collReduceScatter(bucket, mine, p.shardCount, datatype, op, comm, stream));
    place.add(gradShard, mine, p.shardCount, datatype);
    return;
  }
  forEachOwnerPiece(p, begin, count, [&](int owner, size_t lo, size_t hi) {
    void* piece = at(bucket, lo - begin, es);
    const size_t n = hi - lo;
    if (owner != p.rank) {
      checkInnerCall(collReduce(piece, piece, n, datatype, op, owner, comm, stream));
      return;
    }
    void* shardPiece = at(gradShard, lo - p.shardOffset, es);
    checkInnerCall(collReduce(piece, accumulate ? piece : shardPiece, n, datatype, op, owner, comm, stream));
    if (accumulate) place.add(shardPiece, piece, n, datatype);
  });
}

// shard NULL: this rank's piece is already in `out` (collZeroAllGatherRangeInPlace).
void allGatherRange(const void* shard, size_t begin, size_t count, void* out, collDataType_t datatype,
                    const collZeroPartition_t& p, collComm_t comm, const Place& place) {
  const size_t es = kernels::dataTypeSize(datatype);
  if (begin == 0 && count == p.paddedCount && count > 0) {
    const void* mine = shard != nullptr ? shard : at(out, p.shardOffset, es);
    checkInnerCall(collAllGather(mine, out, p.shardCount, datatype, comm, place.stream));
    return;
  }
  forEachOwnerPiece(p, begin, count, [&](int owner, size_t lo, size_t hi) {
    void* piece = at(out, lo - begin, es);
    const size_t n = hi - lo;
    if (owner == p.rank && shard != nullptr) place.copy(piece, at(shard, lo - p.shardOffset, es), n * es);
    checkInnerCall(collBroadcast(piece, piece, n, datatype, owner, comm, place.stream));
  });
}

void checkReduceArgs(const char* function, collDataType_t datatype, collRedOp_t op, int accumulate) {
  checkFloatType(function, datatype, "datatype");
  if (enumBits(op) != collSum && enumBits(op) != collAvg)
    throwError(collInvalidArgument, "%s: op %d is not supported: expected collSum or collAvg", function,
               enumBits(op));
  if (accumulate != 0 && accumulate != 1)
    throwError(collInvalidArgument, "%s: accumulate %d: expected 0 (overwrite) or 1 (add)", function, accumulate);
}

void checkAnyType(const char* function, collDataType_t datatype) {
  if (kernels::dataTypeSize(datatype) == 0)
    throwError(collInvalidArgument, "%s: datatype %d: expected a collDataType_t below collNumTypes", function,
               enumBits(datatype));
}

// The ranges [k*bucketCount, (k+1)*bucketCount) of the padded buffer, or the whole buffer at once.
template <typename Visit>
void forEachBucket(const collZeroPartition_t& p, size_t bucketCount, Visit&& visit) {
  if (bucketCount == 0 || bucketCount >= p.paddedCount) {
    visit(size_t(0), p.paddedCount);
    return;
  }
  for (size_t begin = 0; begin < p.paddedCount; begin += bucketCount)
    visit(begin, std::min(bucketCount, p.paddedCount - begin));
}

// The entry points' bodies, for host memory (stream NULL) and device memory alike: the checks,
// then the work. A call with a stream also checks that its buffers are memory of the stream's GPU.
void reduceScatterRangeCall(const char* function, void* bucket, size_t begin, size_t count, void* gradShard,
                            int accumulate, collDataType_t datatype, collRedOp_t op,
                            const collZeroPartition_t* partition, collComm_t comm, collStream_t stream) {
  const collZeroPartition_t& p = checkPartition(function, partition, comm);
  checkReduceArgs(function, datatype, op, accumulate);
  checkRange(function, begin, count, p);
  checkBuffer(function, bucket, count, "bucket");
  checkBuffer(function, gradShard, p.shardCount, "gradShard");
  if (stream != nullptr) checkStreamBuffers(function, stream, {{bucket, "bucket"}, {gradShard, "gradShard"}});
  reduceScatterRange(bucket, begin, count, gradShard, accumulate, datatype, op, p, comm, {function, stream});
}

void reduceScatterGradientsCall(const char* function, void* grads, void* gradShard, size_t bucketCount, int accumulate,
                                collDataType_t datatype, collRedOp_t op, const collZeroPartition_t* partition,
                                collComm_t comm, collStream_t stream) {
  const collZeroPartition_t& p = checkPartition(function, partition, comm);
  checkReduceArgs(function, datatype, op, accumulate);
  checkBuffer(function, grads, p.paddedCount, "grads");
  checkBuffer(function, gradShard, p.shardCount, "gradShard");
  if (stream != nullptr) checkStreamBuffers(function, stream, {{grads, "grads"}, {gradShard, "gradShard"}});
  const size_t es = kernels::dataTypeSize(datatype);
  forEachBucket(p, bucketCount, [&](size_t begin, size_t count) {
    reduceScatterRange(at(grads, begin, es), begin, count, gradShard, accumulate, datatype, op, p, comm,
                       {function, stream});
  });
}

void allGatherRangeCall(const char* function, const void* shard, size_t begin, size_t count, void* out,
                        collDataType_t datatype, const collZeroPartition_t* partition, collComm_t comm,
                        collStream_t stream) {
  const collZeroPartition_t& p = checkPartition(function, partition, comm);
  checkAnyType(function, datatype);
  checkRange(function, begin, count, p);
  checkBuffer(function, shard, p.shardCount, "shard");
  checkBuffer(function, out, count, "out");
  if (stream != nullptr) checkStreamBuffers(function, stream, {{shard, "shard"}, {out, "out"}});
  allGatherRange(shard, begin, count, out, datatype, p, comm, {function, stream});
}

void allGatherRangeInPlaceCall(const char* function, size_t begin, size_t count, void* out, collDataType_t datatype,
                               const collZeroPartition_t* partition, collComm_t comm, collStream_t stream) {
  const collZeroPartition_t& p = checkPartition(function, partition, comm);
  checkAnyType(function, datatype);
  checkRange(function, begin, count, p);
  checkBuffer(function, out, count, "out");
  if (stream != nullptr) checkStreamBuffers(function, stream, {{out, "out"}});
  allGatherRange(nullptr, begin, count, out, datatype, p, comm, {function, stream});
}

void allGatherParametersCall(const char* function, const void* shard, void* params, size_t bucketCount,
                             collDataType_t datatype, const collZeroPartition_t* partition, collComm_t comm,
                             collStream_t stream) {
  const collZeroPartition_t& p = checkPartition(function, partition, comm);
  checkAnyType(function, datatype);
  checkBuffer(function, shard, p.shardCount, "shard");
  checkBuffer(function, params, p.paddedCount, "params");
  if (stream != nullptr) checkStreamBuffers(function, stream, {{shard, "shard"}, {params, "params"}});
  const size_t es = kernels::dataTypeSize(datatype);
  forEachBucket(p, bucketCount, [&](size_t begin, size_t count) {
    allGatherRange(shard, begin, count, at(params, begin, es), datatype, p, comm, {function, stream});
  });
}

}  // namespace
}  // namespace zero
}  // namespace coll

using namespace coll::zero;

COLL_API collResult_t collZeroReduceScatterRange(void* bucket, size_t begin, size_t count, void* gradShard,
                                                 int accumulate, collDataType_t datatype, collRedOp_t op,
                                                 const collZeroPartition_t* partition, collComm_t comm) {
  const char* function = "collZeroReduceScatterRange";
  return coll::guardedCall(function, [&] {
    reduceScatterRangeCall(function, bucket, begin, count, gradShard, accumulate, datatype, op, partition, comm,
                           nullptr);
  });
}

COLL_API collResult_t collZeroReduceScatterRangeOnStream(void* bucket, size_t begin, size_t count, void* gradShard,
                                                         int accumulate, collDataType_t datatype, collRedOp_t op,
                                                         const collZeroPartition_t* partition, collComm_t comm,
                                                         collStream_t stream) {
  const char* function = "collZeroReduceScatterRangeOnStream";
  return coll::guardedCall(function, [&] {
    reduceScatterRangeCall(function, bucket, begin, count, gradShard, accumulate, datatype, op, partition, comm,
                           stream);
  });
}

COLL_API collResult_t collZeroReduceScatterGradients(void* grads, void* gradShard, size_t bucketCount, int accumulate,
                                                     collDataType_t datatype, collRedOp_t op,
                                                     const collZeroPartition_t* partition, collComm_t comm) {
  const char* function = "collZeroReduceScatterGradients";
  return coll::guardedCall(function, [&] {
    reduceScatterGradientsCall(function, grads, gradShard, bucketCount, accumulate, datatype, op, partition, comm,
                               nullptr);
  });
}

COLL_API collResult_t collZeroReduceScatterGradientsOnStream(void* grads, void* gradShard, size_t bucketCount,
                                                             int accumulate, collDataType_t datatype, collRedOp_t op,
                                                             const collZeroPartition_t* partition, collComm_t comm,
                                                             collStream_t stream) {
  const char* function = "collZeroReduceScatterGradientsOnStream";
  return coll::guardedCall(function, [&] {
    reduceScatterGradientsCall(function, grads, gradShard, bucketCount, accumulate, datatype, op, partition, comm,
                               stream);
  });
}

COLL_API collResult_t collZeroAllGatherRange(const void* shard, size_t begin, size_t count, void* out,
                                             collDataType_t datatype, const collZeroPartition_t* partition,
                                             collComm_t comm) {
  const char* function = "collZeroAllGatherRange";
  return coll::guardedCall(
      function, [&] { allGatherRangeCall(function, shard, begin, count, out, datatype, partition, comm, nullptr); });
}

COLL_API collResult_t collZeroAllGatherRangeOnStream(const void* shard, size_t begin, size_t count, void* out,
                                                     collDataType_t datatype, const collZeroPartition_t* partition,
                                                     collComm_t comm, collStream_t stream) {
  const char* function = "collZeroAllGatherRangeOnStream";
  return coll::guardedCall(
      function, [&] { allGatherRangeCall(function, shard, begin, count, out, datatype, partition, comm, stream); });
}

COLL_API collResult_t collZeroAllGatherRangeInPlace(size_t begin, size_t count, void* out, collDataType_t datatype,
                                                    const collZeroPartition_t* partition, collComm_t comm) {
  const char* function = "collZeroAllGatherRangeInPlace";
  return coll::guardedCall(
      function, [&] { allGatherRangeInPlaceCall(function, begin, count, out, datatype, partition, comm, nullptr); });
}

COLL_API collResult_t collZeroAllGatherRangeInPlaceOnStream(size_t begin, size_t count, void* out,
                                                            collDataType_t datatype,
                                                            const collZeroPartition_t* partition, collComm_t comm,
                                                            collStream_t stream) {
  const char* function = "collZeroAllGatherRangeInPlaceOnStream";
  return coll::guardedCall(
      function, [&] { allGatherRangeInPlaceCall(function, begin, count, out, datatype, partition, comm, stream); });
}

COLL_API collResult_t collZeroAllGatherParameters(const void* shard, void* params, size_t bucketCount,
                                                  collDataType_t datatype, const collZeroPartition_t* partition,
                                                  collComm_t comm) {
  const char* function = "collZeroAllGatherParameters";
  return coll::guardedCall(function, [&] {
    allGatherParametersCall(function, shard, params, bucketCount, datatype, partition, comm, nullptr);
  });
}

COLL_API collResult_t collZeroAllGatherParametersOnStream(const void* shard, void* params, size_t bucketCount,
                                                          collDataType_t datatype, const collZeroPartition_t* partition,
                                                          collComm_t comm, collStream_t stream) {
  const char* function = "collZeroAllGatherParametersOnStream";
  return coll::guardedCall(function, [&] {
    allGatherParametersCall(function, shard, params, bucketCount, datatype, partition, comm, stream);
  });
}
