// The collective table: one row per collective, the one place a collective is described, as the
// algorithm table (src/algorithms/algorithm_table.h) is for algorithms. Validation, the host
// engine's buffer extents, COLL_CHECK, COLL_ALGO's parser and collTypeName read it instead of
// switching on CollType, so adding a collective is its CollType, its row, its entry point and its
// algorithms (docs/architecture.md, "Adding a collective").
#pragma once

#include <cstddef>

#include "src/coll_call.h"

namespace coll {

struct CollectiveRow {
  CollType type;
  const char* name;         // "AllGather": logs, messages, call tags (collTypeName)
  const char* function;     // "collAllGather": the C entry point
  const char* algoName;     // "allgather": COLL_ALGO's spelling before the colon
  const char* perfProgram;  // "all_gather_perf", or nullptr where there is none
  const char* torchOp;      // the ProcessGroup op the Python backend issues it for, or nullptr
  bool hasData;             // false for the barrier: no buffers, no datatype
  bool pointToPoint;        // send and receive: a peer instead of a root; bytes, not elements, must match
  bool rooted;              // validation checks root; COLL_CHECK compares it
  bool reducing;            // validation checks op; COLL_CHECK compares it
  bool variableCounts;      // the counts are arrays (call.counts, VariableCounts)
  // Fixed counts: how many `count`s the send and receive buffers hold on `rank` (0: the rank does
  // not use that buffer). Variable counts leave them null: checkCounts measures the arrays.
  size_t (*sendMultiple)(int rank, int root, int nranks);
  size_t (*recvMultiple)(int rank, int root, int nranks);
  // Variable counts: checks the arrays (validate_counts.h) and fills call.counts' extents.
  void (*checkCounts)(const char* function, CollCall& call, int rank, int nranks);
  // Whether overlapping buffers are the in-place layout the API allows (null: never in place).
  bool (*inPlace)(const CollCall& call, int rank);
  const char* inPlaceRule;  // the same in words, for the docs ("" where there is none)
  const char* checks;       // what validation checks beyond datatype and buffers, in words
};

// Every row, at its CollType's index.
extern const CollectiveRow kCollectiveTable[static_cast<size_t>(CollType::kCount)];

// Inline: every call looks its row up.
inline const CollectiveRow& collectiveRow(CollType type) { return kCollectiveTable[static_cast<size_t>(type)]; }

// The most `count`s either buffer of a fixed-count collective holds on any rank (the root's, for
// rooted ones; 0 for the barrier): how a size in bytes, as the perf programs and the models mean
// it, becomes a count.
size_t largestMultiple(CollType type, int nranks);

// Elements in the call's send and receive buffers on `rank` (0 for a buffer it does not use), for
// a validated call: what the engine registers and what a peer may write at most.
void bufferElements(const CollCall& call, int rank, int nranks, size_t* sendElems, size_t* recvElems);

}  // namespace coll
