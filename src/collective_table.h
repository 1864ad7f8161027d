// The collective table: one row per collective, the one place a collective is described, as the
// algorithm table (src/algorithms/algorithm_table.h) is for algorithms. Validation, the host
// engine's buffer extents, COLL_CHECK, COLL_ALGO's parser, collTypeName and the generic runners
// (one-shot, direct read, the device path's protocol and lowering) read it instead of switching on
// CollType, so adding a collective is its CollType, its row, its entry point and its
// algorithms (docs/architecture.md, "Adding a collective").
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/coll_call.h"

namespace coll {

// Whose send buffers a collective's outputs are made of.
enum class Sources : uint8_t {
  kNone,       // the barrier: nobody's, though every rank meets every other
  kEveryRank,  // every rank's
  kRoot,       // the root's alone (broadcast, scatter)
};

// Where the data of a collective goes, in blocks of `count` elements: what the generic runners
// (one-shot, direct read), the device path's protocol and lowering, and the models read instead of
// switching on the type. Fixed counts follow from the buffer multiples, which test_collective_table
// checks; they are fields so that a call reads them without calling through the row.
struct DataLayout {
  Sources sources;
  bool rootOutputOnly;        // only the root has an output (reduce, gather)
  bool readsOwnBlock;         // rank r takes block r of each source's input, not all of it
  bool outputBlockPerSource;  // source s's part lands at block s of the output, not at its start
  bool largestPerRank;        // fixed counts: a rank's largest buffer (the root's) holds a block per rank
};

// How many `count`s a buffer of a fixed-count collective holds on a rank: a value, not a function,
// so that validation, on every call, computes it inline (multipleOf).
enum class BufferMultiple : uint8_t {
  kNone,             // the rank does not use the buffer
  kOne,              // one count
  kEveryRank,        // one count per rank
  kEveryRankOnRoot,  // one per rank on the root, none elsewhere
  kOneOnRoot,        // one count on the root, none elsewhere
};

inline size_t multipleOf(BufferMultiple multiple, int rank, int root, int nranks) {
  switch (multiple) {
    case BufferMultiple::kOne:
      return 1;
    case BufferMultiple::kEveryRank:
      return static_cast<size_t>(nranks);
    case BufferMultiple::kEveryRankOnRoot:
      return rank == root ? static_cast<size_t>(nranks) : 0;
    case BufferMultiple::kOneOnRoot:
      return rank == root ? 1 : 0;
    case BufferMultiple::kNone:
      break;
  }
  return 0;
}

// Where the direct-read path (cma) is taken below COLL_DIRECT_READ_BYTES: measured per collective
// (src/algorithms/direct_read.h says where and why), bits of CollectiveRow::cmaBelowThreshold.
enum CmaBelowThreshold : uint8_t {
  kCmaTwoRankWindow = 1,  // two ranks, kDirectReadTwoRankBytes up to the threshold: taken outright
  kCmaTwoRankModel = 2,   // two ranks, from kDirectReadTwoRankBytes: offered to the tuner
  kCmaCrowded = 4,        // more ranks than cores, from kDirectReadCrowdedAllToAllBytes: offered
};

struct CollectiveRow {
  CollType type;
  const char* name;         // "AllGather": logs, messages, call tags (collTypeName)
  const char* function;     // "collAllGather": the C entry point
  const char* algoName;     // "allgather": COLL_ALGO's spelling before the colon
  const char* perfProgram;  // "all_gather_perf", or nullptr where there is none
  const char* torchOp;      // the ProcessGroup op the Python backend issues it for, or nullptr
  const char* traceName;    // "all_reduce": the flight recorder's dump and hang lines (collTraceName)
  bool hasData;             // false for the barrier: no buffers, no datatype
  bool pointToPoint;        // send and receive: a peer instead of a root; bytes, not elements, must match
  bool rooted;              // validation checks root; COLL_CHECK compares it
  bool reducing;            // validation checks op; COLL_CHECK compares it
  bool variableCounts;      // the counts are arrays (call.counts, VariableCounts)
  // Fixed counts: how many `count`s the send and receive buffers hold on a rank (sendMultiple,
  // recvMultiple). Variable counts leave them kNone: checkCounts measures the arrays.
  BufferMultiple sendShape;
  BufferMultiple recvShape;
  // Variable counts: checks the arrays (validate_counts.h) and fills call.counts' extents.
  void (*checkCounts)(const char* function, CollCall& call, int rank, int nranks);
  // Whether overlapping buffers are the in-place layout the API allows (null: never in place).
  bool (*inPlace)(const CollCall& call, int rank);
  const char* inPlaceRule;  // the same in words, for the docs ("" where there is none)
  const char* checks;       // what validation checks beyond datatype and buffers, in words
  DataLayout layout;
  uint8_t cmaBelowThreshold;  // CmaBelowThreshold bits

  size_t sendMultiple(int rank, int root, int nranks) const { return multipleOf(sendShape, rank, root, nranks); }
  size_t recvMultiple(int rank, int root, int nranks) const { return multipleOf(recvShape, rank, root, nranks); }
};

// Every row, at its CollType's index.
extern const CollectiveRow kCollectiveTable[static_cast<size_t>(CollType::kCount)];

// Inline: every call looks its row up.
inline const CollectiveRow& collectiveRow(CollType type) { return kCollectiveTable[static_cast<size_t>(type)]; }

// The row's traceName, or "unknown" past the table.
const char* collTraceName(CollType type);

// Whether `rank` computes an output (every rank, or the root alone).
inline bool hasOutput(const CollectiveRow& row, int rank, int root) {
  return row.hasData && (!row.layout.rootOutputOnly || rank == root);
}

// Whether `rank`'s output depends on `peer`'s input: the ranks a rank must wait for.
inline bool readsFrom(const CollectiveRow& row, int rank, int root, int peer) {
  if (row.layout.rootOutputOnly && rank != root) return false;
  return row.layout.sources != Sources::kRoot || peer == root;
}

// Every rank reduces every rank's whole input into its whole output (all-reduce): the shape the
// direct-read path splits into a reduce and a share, and the device path's direct kernel runs.
inline bool reducesIntoEveryRank(const CollectiveRow& row) {
  return row.reducing && row.layout.sources == Sources::kEveryRank && !row.layout.rootOutputOnly &&
         !row.layout.readsOwnBlock && !row.variableCounts;
}

// The most `count`s either buffer of a fixed-count collective holds on any rank (the root's, for
// rooted ones; 0 for the barrier): how a size in bytes, as the perf programs and the models mean
// it, becomes a count.
size_t largestMultiple(CollType type, int nranks);

// Elements in the call's send and receive buffers on `rank` (0 for a buffer it does not use), for
// a validated call: what the engine registers and what a peer may write at most.
void bufferElements(const CollCall& call, int rank, int nranks, size_t* sendElems, size_t* recvElems);

}  // namespace coll
