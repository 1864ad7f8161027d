// A C++ program built against the installed library with find_package(collective): one rank
// from collGetUniqueId + collCommInitRank, an all-reduce with avg, a broadcast, destroy.
#include <collective.h>

#include <cstdio>
#include <vector>

#define CHECK(call)                                                                                     \
  do {                                                                                                  \
    collResult_t res_ = (call);                                                                         \
    if (res_ != collSuccess) {                                                                          \
      std::fprintf(stderr, "%s: %s: %s\n", #call, collGetErrorString(res_), collGetLastError(nullptr)); \
      return 1;                                                                                         \
    }                                                                                                   \
  } while (0)

int main() {
  collUniqueId id;
  collComm_t comm = nullptr;
  CHECK(collGetUniqueId(&id));
  CHECK(collCommInitRank(&comm, 1, id, 0));
  std::vector<double> in(1000), out(1000, -1.0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 0.5 * static_cast<double>(i) - 17;
  CHECK(collAllReduce(in.data(), out.data(), in.size(), collFloat64, collAvg, comm, nullptr));
  if (out != in) {
    std::fprintf(stderr, "all-reduce (avg) on one rank changed the data\n");
    return 1;
  }
  std::vector<int> b(7, 3), c(7, 0);
  CHECK(collBroadcast(b.data(), c.data(), b.size(), collInt32, 0, comm, nullptr));
  if (c != b) {
    std::fprintf(stderr, "broadcast on one rank: wrong data\n");
    return 1;
  }
  CHECK(collCommDestroy(comm));
  std::printf("c++ consumer (%s): ok\n", CONSUMER_FLAVOUR);
  return 0;
}
