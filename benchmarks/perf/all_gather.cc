// all_gather_perf: every rank ends with every rank's buffer, in rank order. busbw = algbw * (n-1)/n.
#include "perf_driver.h"

namespace collperf {
namespace {

Layout layout(const LayoutArgs& a) {
  Layout l;
  size_t per = a.count / a.nranks;
  l.paramCount = per;
  l.sendCount = per;
  l.recvCount = per * a.nranks;
  l.inplaceSendOffset = a.rank * per;  // in place: my contribution already sits in my slot
  return l;
}

void expected(const LayoutArgs& a, std::vector<Segment>* out) {
  size_t per = a.count / a.nranks;
  for (int k = 0; k < a.nranks; ++k) out->push_back({k * per, per, k, 0});
}

double busBwFactor(int n) { return static_cast<double>(n - 1) / n; }

collResult_t run(const CallArgs& c) { return collAllGather(c.sendbuff, c.recvbuff, c.count, c.type, c.comm, c.stream); }

const CollDescriptor kColl = {"all_gather_perf", "collAllGather",  /*hasOp=*/false,
                              /*hasRoot=*/false, /*inPlace=*/true, layout,          expected, busBwFactor, run};

}  // namespace
}  // namespace collperf

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::kColl); }
