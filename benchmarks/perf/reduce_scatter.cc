// reduce_scatter_perf: rank k ends with block k of the reduction of every rank's buffer.
// busbw = algbw * (n-1)/n.
#include "perf_driver.h"

namespace collperf {
namespace {

Layout layout(const LayoutArgs& a) {
  Layout l;
  size_t per = a.count / a.nranks;
  l.paramCount = per;
  l.sendCount = per * a.nranks;
  l.recvCount = per;
  l.inplaceRecvOffset = a.rank * per;  // in place: my result lands in my slot of the input
  return l;
}

void expected(const LayoutArgs& a, std::vector<Segment>* out) {
  size_t per = a.count / a.nranks;
  out->push_back({0, per, kAllRanks, a.rank * per});
}

double busBwFactor(int n) { return static_cast<double>(n - 1) / n; }

collResult_t run(const CallArgs& c) {
  return collReduceScatter(c.sendbuff, c.recvbuff, c.count, c.type, c.op, c.comm, c.stream);
}

const CollDescriptor kColl = {"reduce_scatter_perf",
                              "collReduceScatter",
                              /*hasOp=*/true,
                              /*hasRoot=*/false,
                              /*inPlace=*/true,
                              layout,
                              expected,
                              busBwFactor,
                              run};

}  // namespace
}  // namespace collperf

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::kColl); }
