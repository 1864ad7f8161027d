#include "src/validate_counts.h"

#include <algorithm>
#include <vector>

#include "common/error.h"

namespace coll {
namespace {

void refuseNull(const char* fn, const char* name, const size_t* array, int nranks) {
  if (array == nullptr)
    throwError(collInvalidArgument, "%s: %s is NULL: expected an array of %d entries, one per rank", fn, name, nranks);
}

// The sum of the counts, and in *filled how many are not 0.
size_t sumOf(const char* fn, const char* name, const size_t* counts, int nranks, size_t* filled) {
  size_t total = 0;
  *filled = 0;
  for (int p = 0; p < nranks; ++p) {
    if (__builtin_add_overflow(total, counts[p], &total))
      throwError(collInvalidArgument,
                 "%s: the sum of %s overflows size_t at %s[%d] = %zu: expected counts a buffer holds", fn, name, name,
                 p, counts[p]);
    *filled += counts[p] != 0;
  }
  return total;
}

[[noreturn]] void throwOverlap(const char* fn, const char* displsName, const size_t* counts, const size_t* displs,
                               int a, int b) {
  throwError(collInvalidArgument,
             "%s: the regions of rank %d (%s[%d] = %zu, %zu elements) and rank %d (%s[%d] = %zu, %zu elements) "
             "overlap: expected each rank's elements in a place of their own",
             fn, a, displsName, a, displs[a], counts[a], b, displsName, b, displs[b], counts[b]);
}

// Where the regions counts[p] elements at displs[p] end, at the furthest; with `disjoint`, refuses
// two regions that share an element: they would be the places of two ranks' data at once (a
// receive buffer). Regions of zero elements take no place.
size_t extentOf(const char* fn, const char* countsName, const size_t* counts, const char* displsName,
                const size_t* displs, int nranks, bool disjoint) {
  size_t extent = 0;
  for (int p = 0; p < nranks; ++p) {
    if (counts[p] == 0) continue;
    size_t end;
    if (__builtin_add_overflow(displs[p], counts[p], &end))
      throwError(collInvalidArgument,
                 "%s: %s[%d] = %zu plus %s[%d] = %zu overflows size_t: expected a region inside the buffer", fn,
                 displsName, p, displs[p], countsName, p, counts[p]);
    extent = std::max(extent, end);
  }
  if (!disjoint) return extent;
  // Regions laid out in rank order, as they mostly are, are checked as they come: sorting them
  // would allocate on every call.
  int previous = -1;
  bool inRankOrder = true;
  for (int p = 0; p < nranks && inRankOrder; ++p) {
    if (counts[p] == 0) continue;
    if (previous >= 0) {
      inRankOrder = displs[p] >= displs[previous];
      if (inRankOrder && displs[previous] + counts[previous] > displs[p])
        throwOverlap(fn, displsName, counts, displs, previous, p);
    }
    previous = p;
  }
  if (inRankOrder) return extent;
  std::vector<int> order;
  order.reserve(nranks);
  for (int p = 0; p < nranks; ++p)
    if (counts[p] > 0) order.push_back(p);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return displs[a] < displs[b]; });
  for (size_t i = 1; i < order.size(); ++i)
    if (displs[order[i - 1]] + counts[order[i - 1]] > displs[order[i]])
      throwOverlap(fn, displsName, counts, displs, order[i - 1], order[i]);
  return extent;
}

}  // namespace

void checkAllGatherVCounts(const char* fn, CollCall& c, int rank, int nranks) {
  VariableCounts& v = *c.counts;
  refuseNull(fn, "recvcounts", v.recvcounts, nranks);
  refuseNull(fn, "displs", v.rdispls, nranks);
  if (v.sendcount != v.recvcounts[rank])
    throwError(collInvalidArgument,
               "%s: sendcount %zu differs from recvcounts[%d] = %zu: expected this rank's own entry (every rank "
               "passes the same recvcounts)",
               fn, v.sendcount, rank, v.recvcounts[rank]);
  c.count = sumOf(fn, "recvcounts", v.recvcounts, nranks, &v.filledBlocks);
  v.sendElems = v.sendcount;
  v.recvElems = extentOf(fn, "recvcounts", v.recvcounts, "displs", v.rdispls, nranks, /*disjoint=*/true);
}

void checkReduceScatterVCounts(const char* fn, CollCall& c, int rank, int nranks) {
  VariableCounts& v = *c.counts;
  refuseNull(fn, "recvcounts", v.recvcounts, nranks);
  c.count = sumOf(fn, "recvcounts", v.recvcounts, nranks, &v.filledBlocks);
  v.sendElems = c.count;
  v.recvElems = v.recvcounts[rank];
}

void checkAllToAllVCounts(const char* fn, CollCall& c, int rank, int nranks) {
  VariableCounts& v = *c.counts;
  refuseNull(fn, "sendcounts", v.sendcounts, nranks);
  refuseNull(fn, "sdispls", v.sdispls, nranks);
  refuseNull(fn, "recvcounts", v.recvcounts, nranks);
  refuseNull(fn, "rdispls", v.rdispls, nranks);
  // What a rank sends itself it receives from itself: no peer can tell it otherwise.
  if (v.sendcounts[rank] != v.recvcounts[rank])
    throwError(collInvalidArgument,
               "%s: sendcounts[%d] = %zu differs from recvcounts[%d] = %zu: expected the elements this rank sends "
               "itself to equal those it receives from itself",
               fn, rank, v.sendcounts[rank], rank, v.recvcounts[rank]);
  // Sends may read one region twice; receives must each have a place of their own.
  v.sendElems = extentOf(fn, "sendcounts", v.sendcounts, "sdispls", v.sdispls, nranks, /*disjoint=*/false);
  v.recvElems = extentOf(fn, "recvcounts", v.recvcounts, "rdispls", v.rdispls, nranks, /*disjoint=*/true);
  c.count = 0;
}

size_t blockOffsetOf(const size_t* recvcounts, int of) {
  size_t offset = 0;
  for (int p = 0; p < of; ++p) offset += recvcounts[p];
  return offset;
}

}  // namespace coll
