// reduceCopy whose last destination is written with non-temporal stores. For outputs much
// larger than the caches, ordinary stores first read every destination line into the cache
// (read-for-ownership) and then evict it again: a third of the memory traffic of a two-source
// reduce. Streaming stores skip both. Used by the executor for large user buffers only; FIFO
// slots, which the peer reads right away, keep ordinary stores.
#pragma once

#include <cstddef>

#include "collective.h"

namespace coll {
namespace kernels {

// Same contract as reduceCopy; dsts[ndsts-1] gets non-temporal stores.
void reduceCopyStreamingLast(collDataType_t type, collRedOp_t op, const void* const* srcs, int nsrcs,
                             void* const* dsts, int ndsts, size_t count, int avgDivisor);

// Copies with non-temporal stores (ordinary stores for the unaligned head and the tail).
void streamingCopy(void* dst, const void* src, size_t bytes);

}  // namespace kernels
}  // namespace coll
