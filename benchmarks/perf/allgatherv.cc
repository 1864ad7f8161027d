// allgatherv_perf: rank p's block, its share of the size by --counts, lands at its place in every
// rank's output (blocks packed in rank order). busbw = algbw * (n-1)/n, as all_gather_perf's,
// which is exact for even counts; with uneven ones the largest block sets the pace.
#include "perf_driver.h"

namespace collperf {
namespace {

Layout layout(const LayoutArgs& a) {
  Layout l;
  l.recvcounts = splitCounts(a.count, a.counts, a.nranks);
  l.rdispls = packedDispls(l.recvcounts);
  l.sendCount = l.recvcounts[a.rank];
  for (size_t c : l.recvcounts) l.recvCount += c;
  l.paramCount = l.recvCount;
  l.inplaceSendOffset = l.rdispls[a.rank];  // in place: my block sits at its place in the output
  return l;
}

void expected(const LayoutArgs& a, std::vector<Segment>* out) {
  const Layout l = layout(a);
  for (int p = 0; p < a.nranks; ++p) out->push_back({l.rdispls[p], l.recvcounts[p], p, 0});
}

double busBwFactor(int n) { return static_cast<double>(n - 1) / n; }

collResult_t run(const CallArgs& c) {
  const Layout& l = *c.layout;
  return collAllGatherV(c.sendbuff, l.sendCount, c.recvbuff, l.recvcounts.data(), l.rdispls.data(), c.type, c.comm,
                        c.stream);
}

const CollDescriptor kColl = {"allgatherv_perf",      "collAllGatherV", /*hasOp=*/false,
                              /*hasRoot=*/false,      /*inPlace=*/true, layout,          expected, busBwFactor, run,
                              /*hostMemoryOnly=*/true};

}  // namespace
}  // namespace collperf

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::kColl); }
