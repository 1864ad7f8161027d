// gather_perf: the root ends with every rank's buffer, in rank order. busbw = algbw * (n-1)/n.
#include "perf_driver.h"

namespace collperf {
namespace {

Layout layout(const LayoutArgs& a) {
  Layout l;
  size_t per = a.count / a.nranks;
  l.paramCount = per;
  l.sendCount = per;
  l.recvCount = per * a.nranks;
  l.recvUsed = a.rank == a.root;  // recvbuff is used on the root only: the others pass NULL
  l.inplaceSendOffset = a.root * per;
  return l;
}

void expected(const LayoutArgs& a, std::vector<Segment>* out) {
  size_t per = a.count / a.nranks;
  if (a.rank != a.root) return;
  for (int k = 0; k < a.nranks; ++k) out->push_back({k * per, per, k, 0});
}

double busBwFactor(int n) { return static_cast<double>(n - 1) / n; }

collResult_t run(const CallArgs& c) {
  return collGather(c.sendbuff, c.recvbuff, c.count, c.type, c.root, c.comm, c.stream);
}

const CollDescriptor kColl = {"gather_perf",    "collGather",     /*hasOp=*/false,
                              /*hasRoot=*/true, /*inPlace=*/true, layout,          expected, busBwFactor, run};

}  // namespace
}  // namespace collperf

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::kColl); }
