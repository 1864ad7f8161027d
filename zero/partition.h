// The flat-buffer partition of ZeRO and the argument checks shared by the collZero* entry points.
#pragma once

#include <cstddef>

#include "collective_zero.h"

namespace coll {
namespace zero {

// The owner of flat element `index` (index < paddedCount).
inline int ownerOf(const collZeroPartition_t& partition, size_t index) {
  return static_cast<int>(index / partition.shardCount);
}

// Throws collInvalidArgument, naming `function`, unless `partition` is non-NULL, consistent
// (shardCount * nranks == paddedCount >= totalCount, shardOffset == rank * shardCount), comm is
// non-NULL and the partition was made for this communicator's size and rank.
const collZeroPartition_t& checkPartition(const char* function, const collZeroPartition_t* partition, collComm_t comm);

// Throws collInvalidArgument unless [begin, begin+count) lies inside the padded flat buffer.
void checkRange(const char* function, size_t begin, size_t count, const collZeroPartition_t& partition);

// Throws collInvalidArgument unless datatype is one of the floating-point types the optimizer
// layer keeps (float32, float16, bfloat16); `what` names the argument.
void checkFloatType(const char* function, collDataType_t datatype, const char* what);

// Throws collInvalidArgument when `pointer` is NULL although `count` elements are needed.
void checkBuffer(const char* function, const void* pointer, size_t count, const char* what);

// Turns a failed library call made on this thread into the CollError it reported, so that the
// caller's message says which inner call failed and why.
void checkInnerCall(collResult_t result);

}  // namespace zero
}  // namespace coll
