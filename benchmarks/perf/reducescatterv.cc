// reducescatterv_perf: rank k ends with block k of the reduction of every rank's buffer, the
// blocks packed in rank order and split by --counts. busbw = algbw * (n-1)/n, as
// reduce_scatter_perf's.
#include "perf_driver.h"

namespace collperf {
namespace {

Layout layout(const LayoutArgs& a) {
  Layout l;
  l.recvcounts = splitCounts(a.count, a.counts, a.nranks);
  const std::vector<size_t> offsets = packedDispls(l.recvcounts);
  for (size_t c : l.recvcounts) l.sendCount += c;
  l.recvCount = l.recvcounts[a.rank];
  l.paramCount = l.sendCount;
  l.inplaceRecvOffset = offsets[a.rank];  // in place: my result lands on my block of the input
  return l;
}

void expected(const LayoutArgs& a, std::vector<Segment>* out) {
  const Layout l = layout(a);
  out->push_back({0, l.recvCount, kAllRanks, packedDispls(l.recvcounts)[a.rank]});
}

double busBwFactor(int n) { return static_cast<double>(n - 1) / n; }

collResult_t run(const CallArgs& c) {
  return collReduceScatterV(c.sendbuff, c.recvbuff, c.layout->recvcounts.data(), c.type, c.op, c.comm, c.stream);
}

const CollDescriptor kColl = {"reducescatterv_perf",
                              "collReduceScatterV",
                              /*hasOp=*/true,
                              /*hasRoot=*/false,
                              /*inPlace=*/true,
                              layout,
                              expected,
                              busBwFactor,
                              run,
                              /*hostMemoryOnly=*/true};

}  // namespace
}  // namespace collperf

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::kColl); }
