// collZeroPartitionInit and the checks every collZero* entry point shares.
#include "zero/partition.h"

#include <limits>

#include "common/enum_bits.h"
#include "common/error.h"
#include "src/api_internal.h"

namespace coll {
namespace zero {

const collZeroPartition_t& checkPartition(const char* function, const collZeroPartition_t* partition, collComm_t comm) {
  if (partition == nullptr)
    throwError(collInvalidArgument, "%s: partition is NULL: expected one filled by collZeroPartitionInit", function);
  const collZeroPartition_t& p = *partition;
  if (p.nranks < 1 || p.rank < 0 || p.rank >= p.nranks || p.shardCount * size_t(p.nranks) != p.paddedCount ||
      p.paddedCount < p.totalCount || p.shardOffset != size_t(p.rank) * p.shardCount)
    throwError(collInvalidArgument,
               "%s: partition {totalCount %zu, paddedCount %zu, shardCount %zu, shardOffset %zu, nranks %d, rank %d} "
               "is inconsistent: expected one filled by collZeroPartitionInit",
               function, p.totalCount, p.paddedCount, p.shardCount, p.shardOffset, p.nranks, p.rank);
  // Checked here, before any buffer is touched: a NULL comm would otherwise surface only at the
  // first inner collective, after collZeroAllGatherRange had copied this rank's piece into `out`.
  if (comm == nullptr)
    throwError(collInvalidArgument, "%s: comm is NULL: expected a communicator from collCommInit*", function);
  int nranks = 0, rank = 0;
  checkInnerCall(collCommCount(comm, &nranks));
  checkInnerCall(collCommUserRank(comm, &rank));
  if (nranks != p.nranks || rank != p.rank)
    throwError(collInvalidArgument, "%s: partition was made for rank %d of %d, but the communicator's rank is %d of %d",
               function, p.rank, p.nranks, rank, nranks);
  return p;
}

void checkRange(const char* function, size_t begin, size_t count, const collZeroPartition_t& partition) {
  if (begin > partition.paddedCount || count > partition.paddedCount - begin)
    throwError(collInvalidArgument,
               "%s: range [begin %zu, +count %zu) leaves the flat buffer: expected begin + count <= paddedCount %zu",
               function, begin, count, partition.paddedCount);
}

void checkFloatType(const char* function, collDataType_t datatype, const char* what) {
  const int bits = enumBits(datatype);
  if (bits != collFloat32 && bits != collFloat16 && bits != collBfloat16)
    throwError(collInvalidArgument, "%s: %s %d is not supported: expected collFloat32, collFloat16 or collBfloat16",
               function, what, bits);
}

void checkBuffer(const char* function, const void* pointer, size_t count, const char* what) {
  if (pointer == nullptr && count > 0)
    throwError(collInvalidArgument, "%s: %s is NULL with %zu elements to use: expected a buffer", function, what,
               count);
}

void checkInnerCall(collResult_t result) {
  if (result != collSuccess) throw CollError(result, collGetLastError(nullptr));
}

}  // namespace zero
}  // namespace coll

COLL_API collResult_t collZeroPartitionInit(collZeroPartition_t* partition, size_t totalCount, int nranks, int rank,
                                            size_t alignElements) {
  const char* function = "collZeroPartitionInit";
  return coll::guardedCall(function, [&] {
    using coll::throwError;
    if (partition == nullptr)
      throwError(collInvalidArgument, "%s: partition is NULL: expected a struct to fill", function);
    if (nranks < 1) throwError(collInvalidArgument, "%s: nranks %d: expected >= 1", function, nranks);
    if (rank < 0 || rank >= nranks)
      throwError(collInvalidArgument, "%s: rank %d: expected 0 <= rank < nranks %d", function, rank, nranks);
    const size_t align = alignElements == 0 ? COLL_ZERO_DEFAULT_ALIGN : alignElements;
    const size_t unit = align * size_t(nranks);
    if (unit / size_t(nranks) != align || totalCount > std::numeric_limits<size_t>::max() - unit)
      throwError(collInvalidArgument, "%s: totalCount %zu with alignment %zu over %d ranks overflows size_t", function,
                 totalCount, align, nranks);
    const size_t padded = (totalCount + unit - 1) / unit * unit;
    partition->totalCount = totalCount;
    partition->paddedCount = padded;
    partition->shardCount = padded / size_t(nranks);
    partition->shardOffset = partition->shardCount * size_t(rank);
    partition->nranks = nranks;
    partition->rank = rank;
  });
}
