// broadcast_perf: the root's buffer is copied to every rank. busbw = algbw.
#include "perf_driver.h"

namespace collperf {
namespace {

Layout layout(const LayoutArgs& a) {
  Layout l;
  l.paramCount = l.sendCount = l.recvCount = a.count;
  return l;
}

void expected(const LayoutArgs& a, std::vector<Segment>* out) { out->push_back({0, a.count, a.root, 0}); }

double busBwFactor(int n) { return 1.0; }

collResult_t run(const CallArgs& c) {
  return collBroadcast(c.sendbuff, c.recvbuff, c.count, c.type, c.root, c.comm, c.stream);
}

const CollDescriptor kColl = {"broadcast_perf", "collBroadcast",  /*hasOp=*/false,
                              /*hasRoot=*/true, /*inPlace=*/true, layout,          expected, busBwFactor, run};

}  // namespace
}  // namespace collperf

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::kColl); }
