// sendrecv_perf: rank r sends to r+1 and receives from r-1 (mod n), in one group. busbw = algbw.
// The API defines no in-place send/receive: the in-place columns print N/A.
#include "perf_driver.h"

namespace collperf {
namespace {

Layout layout(const LayoutArgs& a) {
  Layout l;
  l.paramCount = l.sendCount = l.recvCount = a.count;
  return l;
}

void expected(const LayoutArgs& a, std::vector<Segment>* out) {
  out->push_back({0, a.count, (a.rank - 1 + a.nranks) % a.nranks, 0});
}

double busBwFactor(int n) { return 1.0; }

collResult_t run(const CallArgs& c) {
  // Both in one group, so that every rank can post its send before its receive without deadlock.
  collResult_t r = collGroupStart();
  if (r != collSuccess) return r;
  r = collSend(c.sendbuff, c.count, c.type, (c.rank + 1) % c.nranks, c.comm, c.stream);
  if (r == collSuccess) {
    r = collRecv(c.recvbuff, c.count, c.type, (c.rank - 1 + c.nranks) % c.nranks, c.comm, c.stream);
  }
  collResult_t end = collGroupEnd();  // always close the group, even after an error
  return r != collSuccess ? r : end;
}

const CollDescriptor kColl = {"sendrecv_perf",   "collSend/collRecv", /*hasOp=*/false,
                              /*hasRoot=*/false, /*inPlace=*/false,   layout,          expected, busBwFactor, run};

}  // namespace
}  // namespace collperf

int main(int argc, char** argv) { return collperf::perfMain(argc, argv, collperf::kColl); }
