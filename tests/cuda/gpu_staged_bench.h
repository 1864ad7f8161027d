// The staged device path's measurements (gpu_staged --bench): on 2 ranks, the device all-reduce
// against the host all-reduce over the same communicator (so the same sockets) from 8 B to
// COLL_GPU_STAGED_BENCH_BYTES, and the device-to-host copy rate measured in the same run, the
// physical bound of staging through pinned host memory. Rank 0 prints
// "RESULT gpu_staged_bench allreduce BYTES device_us D host_us H" per size and
// "RESULT gpu_staged_bench d2h_copy_bytes_per_s V".
#pragma once

#include <string>
#include <vector>

#include "tests/cuda/api_ranks.h"

namespace colltest {

std::vector<std::string> runStagedBench(ApiRank& rank);

}  // namespace colltest
