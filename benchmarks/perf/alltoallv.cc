// alltoallv_perf: every rank sends every rank a block whose size follows --counts, rotated by the
// sender (perf_counts.h, pairCount), so each rank sends and receives about the size in all.
// busbw = algbw * (n-1)/n, as alltoall_perf's. The API defines no in-place all-to-all: the
// in-place columns print N/A.
#include "perf_driver.h"

namespace collperf {
namespace {

Layout layout(const LayoutArgs& a) {
  Layout l;
  for (int p = 0; p < a.nranks; ++p) {
    l.sendcounts.push_back(pairCount(a.count, a.counts, a.nranks, a.rank, p));
    l.recvcounts.push_back(pairCount(a.count, a.counts, a.nranks, p, a.rank));
  }
  l.sdispls = packedDispls(l.sendcounts);
  l.rdispls = packedDispls(l.recvcounts);
  for (int p = 0; p < a.nranks; ++p) l.sendCount += l.sendcounts[p], l.recvCount += l.recvcounts[p];
  l.paramCount = l.sendCount;
  return l;
}

void expected(const LayoutArgs& a, std::vector<Segment>* out) {
  const Layout l = layout(a);
  for (int p = 0; p < a.nranks; ++p) {
    // Where rank p's block for this rank starts in p's input.
    size_t from = 0;
    for (int q = 0; q < a.rank; ++q) from += pairCount(a.count, a.counts, a.nranks, p, q);
    out->push_back({l.rdispls[p], l.recvcounts[p], p, from});
  }
}

double busBwFactor(int n) { return static_cast<double>(n - 1) / n; }

collResult_t run(const CallArgs& c) {
  const Layout& l = *c.layout;
  return collAllToAllV(c.sendbuff, l.sendcounts.data(), l.sdispls.data(), c.recvbuff, l.recvcounts.data(),
                       l.rdispls.data(), c.type, c.comm, c.stream);
}

const CollDescriptor kColl = {"alltoallv_perf",       "collAllToAllV",   /*hasOp=*/false,
                              /*hasRoot=*/false,      /*inPlace=*/false, layout,          expected, busBwFactor, run,
                              /*hostMemoryOnly=*/true};

}  // namespace
}  // namespace collperf

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::kColl); }
