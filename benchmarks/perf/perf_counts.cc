#include "perf_counts.h"

#include <cstring>

namespace collperf {
namespace {

const char* const kNames[] = {"even", "linear", "zeros", "one"};

size_t weightOf(CountPattern pattern, int rank) {
  switch (pattern) {
    case CountPattern::kEven:
      return 1;
    case CountPattern::kLinear:
      return static_cast<size_t>(rank) + 1;
    case CountPattern::kZeros:
      return rank % 2 == 0 ? 1 : 0;
    case CountPattern::kOne:
      return rank == 0 ? 1 : 0;
  }
  return 1;
}

}  // namespace

bool parseCountPattern(const char* text, CountPattern* pattern) {
  for (int i = 0; i < 4; ++i)
    if (strcmp(text, kNames[i]) == 0) {
      *pattern = static_cast<CountPattern>(i);
      return true;
    }
  return false;
}

const char* countPatternName(CountPattern pattern) { return kNames[static_cast<int>(pattern)]; }

std::vector<size_t> splitCounts(size_t total, CountPattern pattern, int nranks) {
  size_t weights = 0;
  for (int p = 0; p < nranks; ++p) weights += weightOf(pattern, p);
  std::vector<size_t> counts(nranks);
  // In long double: total * weight overflows size_t for the largest sizes times many ranks.
  size_t given = 0;
  int heaviest = 0;
  for (int p = 0; p < nranks; ++p) {
    counts[p] = static_cast<size_t>(static_cast<long double>(total) * weightOf(pattern, p) / weights);
    given += counts[p];
    if (weightOf(pattern, p) > weightOf(pattern, heaviest)) heaviest = p;
  }
  // What rounding left goes to the heaviest block, so the blocks add up to the size: the row's
  // size is then the size asked for, which compare.py matches against Open MPI's rows.
  counts[heaviest] += total - given;
  return counts;
}

std::vector<size_t> packedDispls(const std::vector<size_t>& counts) {
  std::vector<size_t> displs(counts.size());
  size_t at = 0;
  for (size_t p = 0; p < counts.size(); ++p) displs[p] = at, at += counts[p];
  return displs;
}

size_t pairCount(size_t total, CountPattern pattern, int nranks, int from, int to) {
  return splitCounts(total, pattern, nranks)[(from + to) % nranks];
}

}  // namespace collperf
