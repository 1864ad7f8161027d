// The variable-count collectives on device memory through the public API: collAllGatherV,
// collReduceScatterV and collAllToAllV with a stream, every case of the host suite
// (tests/multirank/vcoll_cases.h: every datatype, uneven, empty and lone blocks, displacements out
// of order with gaps, in place, every op of the reduce-scatter, counts past a pipeline chunk). Each
// guarded buffer is copied whole to device memory, the call runs there, and the copy comes back,
// so the host suite's checks read what the device wrote: values, untouched gaps and guards.
// Ranks share GPU 0 as threads (concurrent kernels) or processes (serialized mode); with
// COLL_TRANSPORTS=^shm,p2p every byte is staged over sockets, and --hosts 2 makes two COLL_HOSTID
// hosts (P2P inside, staging between). Prints "RESULT gpu_vcollectives ..." lines; exits 0, 1 on
// a failure, 77 without a GPU.
//
// usage: gpu_vcollectives [--ranks 2,3,4] [--modes threads,processes] [--hosts H] [--filter TEXT]
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/cuda/api_args.h"
#include "tests/cuda/api_ranks.h"
#include "tests/cuda/gpu_ranks.h"
#include "tests/multirank/vcoll_cases.h"

namespace {

using colltest::ApiRank;
using colltest::GuardedMemory;
using colltest::VCase;
using Clock = std::chrono::steady_clock;

std::vector<VCase> casesToRun() {
  const char* filter = getenv(colltest::kGpuTestFilterVar);
  std::vector<VCase> cases;
  for (const VCase& c : colltest::standardVCases())
    if (filter == nullptr || c.describe().find(filter) != std::string::npos) cases.push_back(c);
  return cases;
}

// Device copies of a case's two guarded buffers, in device memory allocated once per rank (an
// allocation per case would synchronize the device while a peer's kernel may wait for this rank).
class DeviceCopies : public colltest::VCaseMemory {
 public:
  explicit DeviceCopies(cudaStream_t stream) : stream_(stream) {}
  ~DeviceCopies() override {
    cudaFree(send_);
    cudaFree(recv_);
    cudaFreeHost(pinnedSend_);
    cudaFreeHost(pinnedRecv_);
  }
  std::string allocate(size_t bytes) {
    if (cudaMalloc(&send_, bytes) != cudaSuccess || cudaMalloc(&recv_, bytes) != cudaSuccess)
      return "cudaMalloc of " + std::to_string(bytes) + " bytes failed";
    if (cudaMallocHost(&pinnedSend_, bytes) != cudaSuccess || cudaMallocHost(&pinnedRecv_, bytes) != cudaSuccess)
      return "cudaMallocHost of " + std::to_string(bytes) + " bytes failed";
    bytes_ = bytes;
    return "";
  }
  collResult_t run(GuardedMemory& sendMem, GuardedMemory& recvMem, const uint8_t* send, uint8_t* recv,
                   const Issue& issue) override {
    if (sendMem.regionBytes() > bytes_ || recvMem.regionBytes() > bytes_) {
      problem_ = "a case's buffers outgrow the device copies";
      return collInternalError;
    }
    // Through pinned memory only: a copy from or into pageable memory may block the thread (and,
    // inside the driver, other threads' copies) until the collective's kernel ends, which waits for
    // the other thread ranks to launch theirs.
    memcpy(pinnedSend_, sendMem.region(), sendMem.regionBytes());
    memcpy(pinnedRecv_, recvMem.region(), recvMem.regionBytes());
    if (!copy(send_, pinnedSend_, sendMem.regionBytes(), cudaMemcpyHostToDevice) ||
        !copy(recv_, pinnedRecv_, recvMem.regionBytes(), cudaMemcpyHostToDevice))
      return collInternalError;
    const collResult_t rc = issue(onDevice(sendMem, recvMem, send), onDevice(sendMem, recvMem, recv), stream_);
    if (rc != collSuccess) return rc;
    if (!copy(pinnedSend_, send_, sendMem.regionBytes(), cudaMemcpyDeviceToHost) ||
        !copy(pinnedRecv_, recv_, recvMem.regionBytes(), cudaMemcpyDeviceToHost))
      return collInternalError;
    if (cudaStreamSynchronize(stream_) != cudaSuccess) return collInternalError;
    memcpy(sendMem.region(), pinnedSend_, sendMem.regionBytes());
    memcpy(recvMem.region(), pinnedRecv_, recvMem.regionBytes());
    return collSuccess;
  }
  const std::string& problem() const { return problem_; }

 private:
  // Where a host buffer's copy lies: the same offset in its region's copy.
  uint8_t* onDevice(GuardedMemory& sendMem, GuardedMemory& recvMem, const uint8_t* host) const {
    if (host >= sendMem.region() && host < sendMem.region() + sendMem.regionBytes())
      return send_ + (host - sendMem.region());
    return recv_ + (host - recvMem.region());
  }
  bool copy(void* to, const void* from, size_t bytes, cudaMemcpyKind kind) {
    const cudaError_t rc = cudaMemcpyAsync(to, from, bytes, kind, stream_);
    if (rc != cudaSuccess) problem_ = std::string("cudaMemcpyAsync: ") + cudaGetErrorString(rc);
    return rc == cudaSuccess;
  }
  cudaStream_t stream_;
  uint8_t* send_ = nullptr;
  uint8_t* recv_ = nullptr;
  void* pinnedSend_ = nullptr;  // the host side of every copy
  void* pinnedRecv_ = nullptr;
  size_t bytes_ = 0;
  std::string problem_;
};

std::vector<std::string> runCases(ApiRank& r) {
  DeviceCopies copies(r.stream);
  // The largest case's guarded regions are a few MiB.
  if (std::string f = copies.allocate(size_t(64) << 20); !f.empty()) return {f};
  const std::vector<VCase> cases = casesToRun();
  std::vector<std::string> failures;
  for (size_t i = 0; i < cases.size(); ++i) {
    colltest::reportProgress(r.rank, "case " + std::to_string(i) + ": " + cases[i].describe());
    std::string f = colltest::runVCase(r.comm, r.rank, r.nranks, cases[i], &copies);
    if (!f.empty())
      failures.push_back("rank " + std::to_string(r.rank) + ": case " + std::to_string(i) + " " + cases[i].describe() +
                         ": " + f + " " + copies.problem());
    // No rank reuses its device copies while a peer may still read them (the peers' failure ends
    // the barrier with an error, not a hang).
    const std::string met = colltest::apiFailure("barrier", collBarrier(r.comm, nullptr), r.comm);
    if (!met.empty()) failures.push_back("after case " + std::to_string(i) + ": " + met);
    if (failures.size() >= 10) break;
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, colltest::ApiRankBody> bodies = {{"vcases", runCases}};
  if (int status = colltest::apiRankChildMain(bodies); status >= 0) return status;
  colltest::ApiArgs args;
  if (!colltest::parseApiArgs(
          argc, argv, "gpu_vcollectives [--ranks 2,3,4] [--modes threads,processes] [--hosts H] [--filter TEXT]",
          &args))
    return 2;
  if (colltest::skipWithoutGpu()) return 77;
  // Thread ranks share one GPU's hardware queues: one per stream (docs/cuda.md).
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  const char* transports = getenv("COLL_TRANSPORTS");
  bool passed = true;
  for (const std::string& mode : args.modes)
    for (int n : args.ranks) {
      if (args.hosts > 1 && mode != "processes") continue;  // COLL_HOSTID groups are per process
      colltest::ApiJob job;
      job.nranks = n;
      job.hosts = args.hosts;
      job.mode = mode;
      job.timeoutMs = colltest::GpuJob::defaultTimeoutMs();
      const Clock::time_point start = Clock::now();
      const std::vector<std::string> failures = colltest::runApiRanks(job, "vcases", runCases);
      const double secs = std::chrono::duration<double>(Clock::now() - start).count();
      for (const std::string& f : failures) printf("FAIL %s\n", f.c_str());
      printf("RESULT gpu_vcollectives %s%s n=%d: %s (%zu cases, %.1f s; COLL_TRANSPORTS=%s)\n", mode.c_str(),
             args.hosts > 1 ? (" hosts=" + std::to_string(args.hosts)).c_str() : "", n,
             failures.empty() ? "PASS" : "FAIL", casesToRun().size(), secs, transports != nullptr ? transports : "");
      fflush(stdout);
      passed = passed && failures.empty();
    }
  return passed ? 0 : 1;
}
