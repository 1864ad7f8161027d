// How the variable-count programs (allgatherv_perf, alltoallv_perf, reducescatterv_perf) split a
// size between ranks: --counts names a pattern of weights, and every rank derives every rank's
// counts from it alike.
#pragma once

#include <cstddef>
#include <vector>

namespace collperf {

enum class CountPattern {
  kEven,    // every rank the same share (the fixed-count collective's layout)
  kLinear,  // rank r holds r+1 shares: the last rank n times the first
  kZeros,   // odd ranks hold nothing, even ranks share everything
  kOne,     // rank 0 holds everything
};

// "even", "linear", "zeros", "one"; false for any other text.
bool parseCountPattern(const char* text, CountPattern* pattern);
const char* countPatternName(CountPattern pattern);

// `total` elements split over `nranks` by the pattern's weights, rounded down, and what rounding
// left added to the heaviest block (the first of the largest weight): the blocks add up to
// `total`. benchmarks/compare/mpi_bench.c splits the same way (its splitCounts).
std::vector<size_t> splitCounts(size_t total, CountPattern pattern, int nranks);
// Where each block starts when the blocks lie packed in rank order.
std::vector<size_t> packedDispls(const std::vector<size_t>& counts);
// All-to-all: what rank `from` sends rank `to`. Each rank sends, and receives, one split of
// `total` in all, rotated by its rank so that every pair's count follows the pattern.
size_t pairCount(size_t total, CountPattern pattern, int nranks, int from, int to);

}  // namespace collperf
