// scatter_perf: rank k ends with block k of the root's buffer. busbw = algbw * (n-1)/n.
#include "perf_driver.h"

namespace collperf {
namespace {

Layout layout(const LayoutArgs& a) {
  Layout l;
  size_t per = a.count / a.nranks;
  l.paramCount = per;
  l.sendCount = per * a.nranks;
  l.recvCount = per;
  l.sendUsed = a.rank == a.root;  // sendbuff is used on the root only: the others pass NULL
  l.inplaceRecvOffset = a.root * per;
  return l;
}

void expected(const LayoutArgs& a, std::vector<Segment>* out) {
  size_t per = a.count / a.nranks;
  out->push_back({0, per, a.root, a.rank * per});
}

double busBwFactor(int n) { return static_cast<double>(n - 1) / n; }

collResult_t run(const CallArgs& c) {
  return collScatter(c.sendbuff, c.recvbuff, c.count, c.type, c.root, c.comm, c.stream);
}

const CollDescriptor kColl = {"scatter_perf",   "collScatter",    /*hasOp=*/false,
                              /*hasRoot=*/true, /*inPlace=*/true, layout,          expected, busBwFactor, run};

}  // namespace
}  // namespace collperf

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::kColl); }
