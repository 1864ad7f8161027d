// Ranks that use the GPU through the public API alone (collCommInitRankConfig, calls with a
// stream), as processes (this program started again per rank; CUDA does not survive fork) or as
// threads: the device path as an application sees it, with whatever COLL_TRANSPORTS selects. The
// staged checks (gpu_staged) run them with P2P and shared memory left out, so that every byte of
// device memory crosses the socket transport; with hosts > 1, rank processes get COLL_HOSTID by
// group, so that P2P serves each "host" and staging joins them (two levels on one GPU).
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "collective.h"

namespace colltest {

struct ApiRank {
  int rank = 0;
  int nranks = 1;
  collComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

// Returns failure descriptions (empty when the rank passed).
using ApiRankBody = std::function<std::vector<std::string>(ApiRank& rank)>;

struct ApiJob {
  int nranks = 2;
  int hosts = 1;                   // processes only: COLL_HOSTID groups of nranks / hosts ranks
  std::string mode = "processes";  // or "threads" (one process: concurrent kernels)
  int timeoutMs =
      60000;  // every wait of the library; a rank without progress (reportProgress) for it + 60 s is stopped
};

// In main, first: a rank process started by runApiRanks runs its body and returns the exit status
// (0 passed, 1 failed); otherwise -1.
int apiRankChildMain(const std::map<std::string, ApiRankBody>& bodies);
// Runs the body on every rank of the job; returns the failures (a rank that hung or died is one).
// bodyName must be registered in the map given to apiRankChildMain by this program's main.
std::vector<std::string> runApiRanks(const ApiJob& job, const std::string& bodyName, const ApiRankBody& body);

// Runs the body on every rank count of `ranks` in every mode of `modes` (processes only where
// hosts > 1), printing each job's failures (the first 20) and "RESULT program mode n=N: PASS|FAIL
// (F failures, S s; COLL_TRANSPORTS=...)"; returns whether every job passed.
bool runEveryApiJob(const char* program, const std::vector<std::string>& modes, const std::vector<int>& ranks,
                    int hosts, const std::string& bodyName, const ApiRankBody& body);

// "" when rc is collSuccess, else "what: error string: last error".
std::string apiFailure(const char* what, collResult_t rc, collComm_t comm);

}  // namespace colltest
