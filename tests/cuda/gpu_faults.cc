// A rank killed mid-collective, on the device path through the public API. Ranks are processes
// sharing GPU 0 (this program started again per rank, rendezvous through the TCP store of an id
// from collGetUniqueId), so they run in serialized mode, whose stream waits have no timeout of
// their own: only the library noticing the dead peer releases them. Each job (2 and 3 ranks):
// three all-reduces checked, then the last rank enqueues two more and SIGKILLs itself while they
// are in flight; the survivors keep enqueueing all-reduces and poll (cudaStreamQuery,
// collCommGetAsyncError), as an application does, until they see an error: a failing call, an
// async error or a stream error. Each survivor prints how long that took; it must be within
// COLL_TIMEOUT_MS plus a margin (COLL_TIMEOUT_MS defaults to 5000 here). Then collCommAbort,
// and the survivor's stream must end (no stream held for good).
// Prints "RESULT gpu_faults <what>: PASS|FAIL"; exits 0, 1 on a failure, 77 without a GPU.
#include <cuda_runtime.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collective.h"
#include "gpu_ranks.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kRankVar = "COLL_FAULT_TEST_RANK";
constexpr const char* kSizeVar = "COLL_FAULT_TEST_NRANKS";
constexpr const char* kIdVar = "COLL_FAULT_TEST_ID";
constexpr int kMarginMs = 5000;     // detection may take a poll interval and a health check past the timeout
constexpr size_t kCount = 1 << 20;  // 4 MiB of floats: several slices per all-reduce

int timeoutMs() {
  const char* v = getenv("COLL_TIMEOUT_MS");
  return v != nullptr && atoi(v) > 0 ? atoi(v) : 5000;
}

long msSince(Clock::time_point t) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count());
}

// Ends this rank process without running destructors: after a failure the CUDA teardown at exit
// is not what is tested, and must not be what hangs.
[[noreturn]] void leave(int rank, int status, const std::string& why) {
  if (!why.empty()) printf("FAIL rank %d: %s\n", rank, why.c_str());
  fflush(stdout);
  _exit(status);
}

int rankMain(int rank, int n, const std::string& idHex) {
  const int limitMs = timeoutMs();
  // A survivor that hangs despite everything: say so rather than be killed silently.
  std::thread([rank, limitMs] {
    std::this_thread::sleep_for(std::chrono::milliseconds(limitMs + 30000));
    printf("TIMEOUT gpu_faults rank %d: not done after %d ms\n", rank, limitMs + 30000);
    fflush(stdout);
    _exit(124);
  }).detach();
  const int victim = n - 1;
  if (cudaSetDevice(0) != cudaSuccess) leave(rank, 1, "cudaSetDevice(0) failed");
  cudaStream_t s = nullptr;
  float *in = nullptr, *out = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc(&in, kCount * sizeof(float)) != cudaSuccess || cudaMalloc(&out, kCount * sizeof(float)) != cudaSuccess)
    leave(rank, 1, "allocating the stream and buffers failed");
  std::vector<float> host(kCount, static_cast<float>(rank + 1));
  if (cudaMemcpy(in, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
    leave(rank, 1, "uploading the input failed");

  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = limitMs;
  collComm_t comm = nullptr;
  if (collCommInitRankConfig(&comm, n, colltest::uniqueIdFromHex(idHex), rank, &config) != collSuccess)
    leave(rank, 1, std::string("init: ") + collGetLastError(nullptr));

  // Working before the kill: three all-reduces, each checked.
  const float expected = static_cast<float>(n * (n + 1) / 2);
  for (int k = 0; k < 3; ++k) {
    if (cudaMemsetAsync(out, 0xff, kCount * sizeof(float), s) != cudaSuccess ||
        collAllReduce(in, out, kCount, collFloat, collSum, comm, s) != collSuccess)
      leave(rank, 1, std::string("all-reduce before the kill: ") + collGetLastError(comm));
    if (cudaMemcpyAsync(host.data(), out, kCount * sizeof(float), cudaMemcpyDeviceToHost, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess)
      leave(rank, 1, "reading the result before the kill failed");
    for (size_t i = 0; i < kCount; ++i)
      if (host[i] != expected)
        leave(rank, 1,
              "all-reduce " + std::to_string(k) + " before the kill: element " + std::to_string(i) + " is " +
                  std::to_string(host[i]) + ", expected " + std::to_string(expected));
  }

  const Clock::time_point start = Clock::now();
  if (rank == victim) {
    // Dies with its launches in flight and its peers' kernels or stream waits expecting it.
    collAllReduce(in, out, kCount, collFloat, collSum, comm, s);
    collAllReduce(in, out, kCount, collFloat, collSum, comm, s);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    printf("rank %d: raising SIGKILL with two all-reduces in flight\n", rank);
    fflush(stdout);
    raise(SIGKILL);
  }

  // A survivor: keep calling, and poll as an application would, until an error shows.
  std::string how;
  for (int k = 0; k < 10 && how.empty(); ++k)
    if (collAllReduce(in, out, kCount, collFloat, collSum, comm, s) != collSuccess)
      how = "all-reduce " + std::to_string(k) + " after the kill failed: " + collGetLastError(comm);
  while (how.empty() && msSince(start) < limitMs + kMarginMs + 10000) {
    const cudaError_t q = cudaStreamQuery(s);
    collResult_t stopped = collSuccess;
    // Kernels asked to stop end their launches (staged peers: the proxy stops them at once), so a
    // stream that ended is right only with an error recorded.
    if (q == cudaSuccess && (collCommGetAsyncError(comm, &stopped) != collSuccess || stopped == collSuccess))
      leave(rank, 1, "every all-reduce completed although rank " + std::to_string(victim) + " was killed");
    if (q == cudaSuccess) {
      how = std::string("the kernels stopped; collCommGetAsyncError: ") + collGetErrorString(stopped);
      break;
    }
    if (q != cudaErrorNotReady) {
      how = std::string("stream error: ") + cudaGetErrorString(q);
      break;
    }
    collResult_t async = collSuccess;
    if (collCommGetAsyncError(comm, &async) != collSuccess)
      how = std::string("collCommGetAsyncError failed: ") + collGetLastError(comm);
    else if (async != collSuccess)
      how = std::string("collCommGetAsyncError: ") + collGetErrorString(async);
    if (how.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const long detectedMs = msSince(start);
  if (how.empty()) leave(rank, 1, "no error " + std::to_string(detectedMs) + " ms after the kill");
  printf("rank %d: error %ld ms after the kill (COLL_TIMEOUT_MS %d): %s\n", rank, detectedMs, limitMs, how.c_str());
  fflush(stdout);

  // Abort releases whatever still holds the stream; the stream must then end.
  const Clock::time_point aborted = Clock::now();
  const collResult_t abortResult = collCommAbort(comm);
  cudaError_t q = cudaErrorNotReady;
  while ((q = cudaStreamQuery(s)) == cudaErrorNotReady && msSince(aborted) < 10000)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  printf("rank %d: collCommAbort %s; the stream %s %ld ms after it\n", rank, collGetErrorString(abortResult),
         q == cudaErrorNotReady ? "was still held" : "ended", msSince(aborted));
  if (q == cudaErrorNotReady) leave(rank, 1, "the stream was still held 10 s after collCommAbort");
  if (detectedMs > limitMs + kMarginMs)
    leave(rank, 1,
          "the error came after " + std::to_string(detectedMs) + " ms, more than COLL_TIMEOUT_MS + " +
              std::to_string(kMarginMs));
  leave(rank, 0, "");
}

// Starts n rank processes and judges how they ended.
bool runJob(int n) {
  collUniqueId id;
  if (collGetUniqueId(&id) != collSuccess) {
    printf("RESULT gpu_faults rank killed mid-collective n=%d: FAIL: collGetUniqueId: %s\n", n,
           collGetLastError(nullptr));
    return false;
  }
  const std::string hex = colltest::uniqueIdToHex(id);
  std::vector<pid_t> pids;
  std::vector<std::string> failures;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> vars = {std::string(kRankVar) + "=" + std::to_string(r),
                                     std::string(kSizeVar) + "=" + std::to_string(n), std::string(kIdVar) + "=" + hex};
    const pid_t pid = colltest::spawnSelf(std::move(vars));
    if (pid == 0) {
      failures.push_back("posix_spawn of rank " + std::to_string(r) + " failed");
      break;
    }
    pids.push_back(pid);
  }
  // The ranks' own watchdogs end them at COLL_TIMEOUT_MS + 30 s; this is the last resort.
  const Clock::time_point start = Clock::now();
  const long limit = timeoutMs() + 40000;
  for (size_t r = 0; r < pids.size(); ++r) {
    int status = 0;
    pid_t done = 0;
    while ((done = waitpid(pids[r], &status, WNOHANG)) == 0 && msSince(start) < limit)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (done == 0) {
      for (pid_t p : pids) kill(p, SIGKILL);
      waitpid(pids[r], &status, 0);
      failures.push_back("rank " + std::to_string(r) + " was still running after " + std::to_string(limit) + " ms");
      continue;
    }
    const bool victim = static_cast<int>(r) == n - 1;
    if (victim && !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
      failures.push_back("rank " + std::to_string(r) + " was to die of SIGKILL, but did not (status " +
                         std::to_string(status) + ")");
    if (!victim && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
      failures.push_back("survivor rank " + std::to_string(r) + " " +
                         (WIFEXITED(status) ? "exited with " + std::to_string(WEXITSTATUS(status))
                                            : "died of signal " + std::to_string(WTERMSIG(status))));
  }
  std::string why;
  for (const std::string& f : failures) why += (why.empty() ? "" : "; ") + f;
  printf("RESULT gpu_faults rank killed mid-collective n=%d: %s%s%s (%ld ms)\n", n, why.empty() ? "PASS" : "FAIL",
         why.empty() ? "" : ": ", why.c_str(), msSince(start));
  fflush(stdout);
  return why.empty();
}

}  // namespace

int main() {
  if (const char* rank = getenv(kRankVar)) return rankMain(atoi(rank), atoi(getenv(kSizeVar)), getenv(kIdVar));
  if (colltest::skipWithoutGpu()) return 77;
  // Small, so that a missed detection shows as a time well past it rather than a long wait; the
  // rank processes inherit it.
  if (getenv("COLL_TIMEOUT_MS") == nullptr) setenv("COLL_TIMEOUT_MS", "5000", 1);
  bool passed = true;
  for (int n : {2, 3}) passed = runJob(n) && passed;
  return passed ? 0 : 1;
}
