// reduce_perf: the root ends with the reduction of every rank's buffer. busbw = algbw.
#include "perf_driver.h"

namespace collperf {
namespace {

Layout layout(const LayoutArgs& a) {
  Layout l;
  l.paramCount = l.sendCount = l.recvCount = a.count;
  l.recvUsed = a.rank == a.root;  // recvbuff is used on the root only: the others pass NULL
  return l;
}

void expected(const LayoutArgs& a, std::vector<Segment>* out) {
  if (a.rank == a.root) out->push_back({0, a.count, kAllRanks, 0});
}

double busBwFactor(int n) { return 1.0; }

collResult_t run(const CallArgs& c) {
  return collReduce(c.sendbuff, c.recvbuff, c.count, c.type, c.op, c.root, c.comm, c.stream);
}

const CollDescriptor kColl = {"reduce_perf",    "collReduce",     /*hasOp=*/true,
                              /*hasRoot=*/true, /*inPlace=*/true, layout,         expected, busBwFactor, run};

}  // namespace
}  // namespace collperf

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::kColl); }
