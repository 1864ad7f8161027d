// One collective call as the layers below the C API see it: which collective, the buffers and
// the arguments, already validated.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collective.h"

namespace coll {

enum class CollType : uint8_t {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kGather,
  kScatter,
  kAllToAll,
  kBarrier,
  kSend,
  kRecv,
  kAllGatherV,
  kReduceScatterV,
  kAllToAllV,
  kCount  // call tags hold CollType + 1 in 4 bits (call_tag.h): at most 15 collectives
};

const char* collTypeName(CollType type);  // "AllReduce", ... (src/collective_table.h)

// The arrays of a variable-count collective (AllGatherV, ReduceScatterV, AllToAllV) as the caller
// passed them, counts and displacements in elements, one entry per rank; validation
// (validate_counts.h) checks them and fills the extents. They live on the entry point's stack:
// such a call runs before its entry point returns.
struct VariableCounts {
  size_t sendcount = 0;                // AllGatherV: the elements this rank contributes
  const size_t* sendcounts = nullptr;  // AllToAllV: elements to each rank
  const size_t* sdispls = nullptr;     // AllToAllV: where each rank's elements start in sendbuff
  const size_t* recvcounts = nullptr;  // elements from each rank (ReduceScatterV: each rank's block)
  const size_t* rdispls = nullptr;     // AllGatherV, AllToAllV: where each rank's elements land
  size_t sendElems = 0;                // the buffers' extents on this rank, in elements
  size_t recvElems = 0;
  // AllGatherV, ReduceScatterV: the ranks whose block holds elements (entries of recvcounts that
  // are not 0, alike on every rank), which the plan follows (oneshot.cc); AllToAllV: 0.
  size_t filledBlocks = 0;
};

struct CollCall {
  CollType type = CollType::kBarrier;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  // The count argument of the C call (per-rank count for gather-like calls). Variable counts: what
  // every rank agrees on, which the call's tag carries (validate_counts.h).
  size_t count = 0;
  collDataType_t datatype = collUint8;
  collRedOp_t op = collSum;
  int root = 0;  // rooted collectives: the root
  int peer = 0;  // send and receive: the other rank
  size_t elemSize = 1;
  VariableCounts* counts = nullptr;  // variable-count collectives only
};

// A call with nothing to move on this rank, which the engines skip: a count of 0 (but a barrier),
// unless its arrays give this rank data to send or receive (an all-to-all's count is 0 on every
// rank).
inline bool movesNothing(const CollCall& call) {
  return call.count == 0 && call.type != CollType::kBarrier &&
         (call.counts == nullptr || (call.counts->sendElems == 0 && call.counts->recvElems == 0));
}

}  // namespace coll
