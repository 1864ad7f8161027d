// The data the perf programs feed the collectives in check mode, and how they verify the output.
//
// Every rank's input element i is a deterministic function of (rank, i, op), so every rank can
// compute the exact expected output of any collective without communicating. The values are small
// integers chosen so that every result is exact in every type, bfloat16 included (integers up to
// 256 are exact there): sums stay within +-120, products are +-1 or +-2, and min/max and data
// movement use values in [-100, 100] (or [0, 200] for unsigned types). Only avg on floating-point
// types is compared with a tolerance, because 1/nranks need not be representable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "perf_types.h"

namespace collperf {

enum class Pattern { kSum, kProd, kWide };

// kSum for sum/avg, kProd for prod, kWide for min/max and for collectives without an op.
Pattern patternFor(bool hasOp, collRedOp_t op);

inline int64_t patternValue(Pattern p, int rank, uint64_t i, int nranks, bool isSigned) {
  uint64_t r = static_cast<uint64_t>(rank);
  switch (p) {
    case Pattern::kSum: {
      int64_t h = 120 / nranks;
      h = h < 1 ? 1 : (h > 4 ? 4 : h);
      if (isSigned) return static_cast<int64_t>((i * 5 + r * 3) % static_cast<uint64_t>(2 * h + 1)) - h;
      return static_cast<int64_t>((i * 5 + r * 3) % static_cast<uint64_t>(h + 1));
    }
    case Pattern::kProd: {
      uint64_t n = static_cast<uint64_t>(nranks);
      int64_t v = (i % n == r) ? 2 : 1;
      if (isSigned && (i / 2 + 1) % n == r) v = -v;
      return v;
    }
    case Pattern::kWide:
    default: {
      int64_t v = static_cast<int64_t>((i * 7 + r * 13) % 201);
      return isSigned ? v - 100 : v;
    }
  }
}

// Where a run of output elements comes from: elements [offset, offset+length) of this rank's
// output equal input elements [srcOffset, srcOffset+length) of rank srcRank, or, when srcRank is
// kAllRanks, the reduction with the call's op of those input elements over every rank.
constexpr int kAllRanks = -1;
struct Segment {
  size_t offset;
  size_t length;
  int srcRank;
  size_t srcOffset;
};

struct DataSpec {
  const TypeInfo* type;
  Pattern pattern;
  collRedOp_t op;
  int rank;
  int nranks;
};

// buf[i] = pattern(rank, i) for i in [0, count).
void fillInput(const DataSpec& spec, void* buf, size_t count);
void fillPoison(const TypeInfo& type, void* buf, size_t count);
// Number of output elements that differ from what `segments` says they must be.
size_t countWrong(const DataSpec& spec, const void* buf, const std::vector<Segment>& segments);

}  // namespace collperf
