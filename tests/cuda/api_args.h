// The command line that the programs running ranks through the public API share (gpu_vcollectives,
// gpu_staged): --ranks 2,3,4, --modes threads,processes, --hosts H, and --filter TEXT, which every
// rank reads (threads and processes alike) from COLL_GPU_TEST_FILTER. A program's own options go
// through `extra`.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace colltest {

// Where --filter's text goes, for the rank bodies.
constexpr const char* kGpuTestFilterVar = "COLL_GPU_TEST_FILTER";

struct ApiArgs {
  std::vector<int> ranks = {2, 3, 4};                         // --ranks
  std::vector<std::string> modes = {"threads", "processes"};  // --modes
  int hosts = 1;                                              // --hosts
};

// Takes argv[i] (and its value, advancing i) when it is one of the program's own options; false
// when it is not.
using ExtraOption = std::function<bool(int argc, char** argv, int& i)>;

// Reads argv[1..] into *args (its defaults stay where an option is absent). An argument that is no
// option, or an option without its value: prints "usage: " + usage to stderr and returns false.
bool parseApiArgs(int argc, char** argv, const char* usage, ApiArgs* args, const ExtraOption& extra = {});

}  // namespace colltest
