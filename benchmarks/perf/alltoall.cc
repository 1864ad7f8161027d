// alltoall_perf: block p of rank q's input ends as block q of rank p's output.
// busbw = algbw * (n-1)/n. The API defines no in-place all-to-all: the in-place columns print N/A.
#include "perf_driver.h"

namespace collperf {
namespace {

Layout layout(const LayoutArgs& a) {
  Layout l;
  size_t per = a.count / a.nranks;
  l.paramCount = per;
  l.sendCount = l.recvCount = per * a.nranks;
  return l;
}

void expected(const LayoutArgs& a, std::vector<Segment>* out) {
  size_t per = a.count / a.nranks;
  for (int p = 0; p < a.nranks; ++p) out->push_back({p * per, per, p, a.rank * per});
}

double busBwFactor(int n) { return static_cast<double>(n - 1) / n; }

collResult_t run(const CallArgs& c) { return collAllToAll(c.sendbuff, c.recvbuff, c.count, c.type, c.comm, c.stream); }

const CollDescriptor kColl = {"alltoall_perf",   "collAllToAll",    /*hasOp=*/false,
                              /*hasRoot=*/false, /*inPlace=*/false, layout,          expected, busBwFactor, run};

}  // namespace
}  // namespace collperf

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::kColl); }
