// The cases the sharded reduce-scatter and all-gather tests share: buffer layouts, the ranges of
// a partition worth testing, and the inputs every rank can compute for every other rank.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "zero_test_util.h"

namespace zerotest {

// A flat buffer of `total` elements with shards aligned to `align` (0: the default).
struct Layout {
  size_t total, align;
};

// Empty, one element (padded to 16 per shard, and to one per shard), odd shards (align 1, 3, 5)
// and the default alignment's padding.
inline std::vector<Layout> standardLayouts() {
  return {{0, 0}, {1, 0}, {1, 1}, {37, 1}, {100, 0}, {517, 3}, {203, 5}, {5003, 1}};
}

struct Range {
  size_t begin, count;
};

// Whole buffer, empty ranges (at 0, inside a shard, at the end), ranges inside one shard,
// across one boundary, starting and ending inside shards across several, whole shards.
inline std::vector<Range> rangesOf(const collZeroPartition_t& p) {
  const long long P = (long long)p.paddedCount, S = (long long)p.shardCount, n = p.nranks;
  const long long candidates[][2] = {
      {0, P},           {0, 0},     {P, 0},     {S / 2, 0}, {1, S - 2}, {S / 2, S}, {S / 2, P - S}, {S - 1, 2},
      {(n - 1) * S, S}, {P - 1, 1}, {S, P - S}, {0, P - 1}, {S + 1, S}, {1, P - 2}, {S + 3, 1},     {S / 3, 2 * S / 3}};
  std::vector<Range> ranges;
  for (const auto& c : candidates) {
    if (c[0] < 0 || c[1] < 0 || c[0] + c[1] > P) continue;
    const Range r{size_t(c[0]), size_t(c[1])};
    if (std::none_of(ranges.begin(), ranges.end(),
                     [&](const Range& o) { return o.begin == r.begin && o.count == r.count; }))
      ranges.push_back(r);
  }
  return ranges;
}

// Bucket sizes: one call, smaller than a shard, not dividing the buffer, bigger than a shard,
// the whole buffer, bigger than the buffer.
inline std::vector<size_t> bucketCountsOf(const collZeroPartition_t& p) {
  const size_t S = p.shardCount, P = p.paddedCount;
  std::vector<size_t> counts = {0, S / 2 > 1 ? S / 2 - 1 : 1, S + 1, 2 * S > 1 ? 2 * S - 1 : 1, P, P + 7};
  if (P > 0 && P <= 64) counts.push_back(3);  // many tiny buckets where that stays quick
  std::vector<size_t> unique;
  for (size_t c : counts)
    if (std::find(unique.begin(), unique.end(), c) == unique.end()) unique.push_back(c);
  return unique;
}

// Gradient of flat element i on `rank`: small integers, so sums over 4 ranks are exact in half
// and bfloat16 and only collAvg rounds.
inline double gradValue(int rank, size_t i) { return double(int((i * 7 + size_t(rank) * 13 + 3) % 9) - 4); }

// What gradShard holds before an accumulating call.
inline double priorValue(int rank, size_t j) { return double(int((j * 5 + size_t(rank) * 3 + 1) % 7) - 3); }

inline double reducedGrad(int nranks, size_t i, collRedOp_t op) {
  double sum = 0.0;
  for (int r = 0; r < nranks; ++r) sum += gradValue(r, i);
  return op == collAvg ? sum / nranks : sum;
}

// The parameter at flat element i, whoever owns it: exact in its type, different at every
// nearby index so that a piece from the wrong owner or offset shows.
inline double paramValue(collDataType_t type, size_t i) {
  const double m = double(int((i * 11 + 5) % 251) - 125);
  switch (type) {
    case collInt32:
      return double((long long)((i * 2654435761ull) % 2000000011ull) - 1000000005ll);
    case collFloat32:
    case collFloat64:
      return m + double(i % 7) / 1024.0;
    default:
      return m;  // int8, half and bfloat16 hold [-125, 125] exactly
  }
}

inline std::string describe(const char* function, int rank, const collZeroPartition_t& p, collDataType_t type) {
  return "rank " + std::to_string(rank) + "/" + std::to_string(p.nranks) + ": " + function + " total " +
         std::to_string(p.totalCount) + " padded " + std::to_string(p.paddedCount) + " shard " +
         std::to_string(p.shardCount) + " " + typeName(type);
}

}  // namespace zerotest
