// What the sections of gpu_api share (gpu_api.cc, gpu_api_sequences.cc): ranks as threads of
// this process sharing GPU 0 and one in-memory store, failure lists, and the checks of a device
// buffer against values computed on the host.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/memory_store.h"
#include "collective.h"

namespace gpuapi {

using Failures = std::vector<std::string>;
using StorePtr = std::shared_ptr<coll::bootstrap::Store>;

// COLL_TIMEOUT_MS, default 60000: every wait of the library and of these checks.
int timeoutMs();
std::string lastError(collComm_t comm);
// The section running now, for the watchdog's TIMEOUT line.
void setSection(const std::string& what);
std::string section();

// Runs body(rank, n, store) on n threads (one shared MemoryStore), prints each failure as
// "FAIL rank r: ..." and "RESULT gpu_api <what>: PASS|FAIL". Returns whether it passed.
bool runRankThreads(const std::string& what, int n,
                    const std::function<Failures(int rank, int n, const StorePtr& store)>& body);

// Copies `expected.size()` floats from `device` (on `stream`, then waits for it) and appends up
// to 3 mismatches to *failures, named by `what`.
void expectFloats(Failures* failures, const std::string& what, const void* device, const std::vector<float>& expected,
                  cudaStream_t stream);

// The further sections (gpu_api_sequences.cc).
bool checkBackToBack(int n);
bool checkPerThreadStream(int n);
bool checkGraphReplay(int n);
bool checkTwoCommunicators(int n);
bool checkAbortUnblocks();

}  // namespace gpuapi

// In functions returning Failures: end with that failure.
#define CHECK_CUDA(call)                                                                  \
  do {                                                                                    \
    cudaError_t rc_ = (call);                                                             \
    if (rc_ != cudaSuccess) return {std::string(#call) + ": " + cudaGetErrorString(rc_)}; \
  } while (0)
#define CHECK_COLL(call, comm)                                                               \
  do {                                                                                       \
    if ((call) != collSuccess) return {std::string(#call) + ": " + gpuapi::lastError(comm)}; \
  } while (0)
