// all_reduce_perf: every rank ends with the reduction of every rank's buffer. busbw = algbw * 2(n-1)/n.
#include "perf_driver.h"

namespace collperf {
namespace {

Layout layout(const LayoutArgs& a) {
  Layout l;
  l.paramCount = l.sendCount = l.recvCount = a.count;
  return l;
}

void expected(const LayoutArgs& a, std::vector<Segment>* out) { out->push_back({0, a.count, kAllRanks, 0}); }

double busBwFactor(int n) { return 2.0 * (n - 1) / n; }

collResult_t run(const CallArgs& c) {
  return collAllReduce(c.sendbuff, c.recvbuff, c.count, c.type, c.op, c.comm, c.stream);
}

const CollDescriptor kColl = {"all_reduce_perf", "collAllReduce",  /*hasOp=*/true,
                              /*hasRoot=*/false, /*inPlace=*/true, layout,         expected, busBwFactor, run};

}  // namespace
}  // namespace collperf

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::kColl); }
