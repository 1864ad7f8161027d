// Checks of the variable-count collectives' arrays (AllGatherV, ReduceScatterV, AllToAllV), as
// their rows in the collective table name them. Each throws CollError(collInvalidArgument) naming
// the C function, the array, the entry and what was expected, before any buffer or peer is
// touched; on success it fills call.counts' extents and call.count, the count every rank agrees
// on, which the call's tag carries (src/call_tag.h): the sum of recvcounts for AllGatherV and
// ReduceScatterV, 0 for AllToAllV, whose totals differ between ranks (its steps carry a tag per
// pair of ranks instead).
#pragma once

#include "src/coll_call.h"

namespace coll {

void checkAllGatherVCounts(const char* function, CollCall& call, int rank, int nranks);
void checkReduceScatterVCounts(const char* function, CollCall& call, int rank, int nranks);
void checkAllToAllVCounts(const char* function, CollCall& call, int rank, int nranks);

// Where rank `of`'s block starts in a ReduceScatterV send buffer: the sum of the counts below it
// (validated not to overflow).
size_t blockOffsetOf(const size_t* recvcounts, int of);

}  // namespace coll
