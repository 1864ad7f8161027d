#include "tests/cuda/gpu_staged_bench.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/cuda/gpu_ranks.h"

namespace colltest {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Fewer calls for larger sizes: each size gets a fraction of a second at most on a fast link.
int itersFor(size_t bytes) { return bytes <= (size_t(1) << 20) ? 50 : bytes <= (size_t(16) << 20) ? 10 : 3; }

// Average seconds of one all-reduce of `bytes` (floats) from `send` to `recv`: on the stream for
// device buffers, NULL for host ones. The ranks start together at a host barrier.
double timeAllReduce(ApiRank& r, const void* send, void* recv, size_t bytes, bool device, std::string* error) {
  const size_t count = bytes / sizeof(float);
  const collStream_t stream = device ? r.stream : nullptr;
  for (int i = 0; i < 2; ++i)
    *error += apiFailure("warm-up", collAllReduce(send, recv, count, collFloat, collSum, r.comm, stream), r.comm);
  if (device) cudaStreamSynchronize(r.stream);
  *error += apiFailure("barrier", collBarrier(r.comm, nullptr), r.comm);
  const int iters = itersFor(bytes);
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < iters && error->empty(); ++i)
    *error += apiFailure("all-reduce", collAllReduce(send, recv, count, collFloat, collSum, r.comm, stream), r.comm);
  if (device && cudaStreamSynchronize(r.stream) != cudaSuccess) *error += "cudaStreamSynchronize failed";
  return secondsSince(start) / iters;
}

// The device-to-host copy rate of `bytes` into pinned memory, this GPU, now.
double deviceToHostRate(ApiRank& r, const void* device, size_t bytes) {
  void* pinned = nullptr;
  if (cudaMallocHost(&pinned, bytes) != cudaSuccess) return 0;
  cudaMemcpyAsync(pinned, device, bytes, cudaMemcpyDeviceToHost, r.stream);
  cudaStreamSynchronize(r.stream);
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < 5; ++i) cudaMemcpyAsync(pinned, device, bytes, cudaMemcpyDeviceToHost, r.stream);
  cudaStreamSynchronize(r.stream);
  const double rate = 5.0 * bytes / secondsSince(start);
  cudaFreeHost(pinned);
  return rate;
}

}  // namespace

std::vector<std::string> runStagedBench(ApiRank& r) {
  const char* maxText = getenv("COLL_GPU_STAGED_BENCH_BYTES");
  const size_t maxBytes = maxText != nullptr ? strtoull(maxText, nullptr, 10) : size_t(256) << 20;
  char *dsend = nullptr, *drecv = nullptr;
  if (cudaMalloc(&dsend, maxBytes) != cudaSuccess || cudaMalloc(&drecv, maxBytes) != cudaSuccess)
    return {"cudaMalloc of " + std::to_string(maxBytes) + " bytes failed"};
  cudaMemsetAsync(dsend, 0, maxBytes, r.stream);
  std::vector<float> hsend(maxBytes / sizeof(float), 1.0f), hrecv(maxBytes / sizeof(float));
  std::string error;
  std::vector<size_t> sizes = {8};
  for (size_t bytes = size_t(64) << 10; bytes <= maxBytes; bytes *= 4) sizes.push_back(bytes);
  for (size_t bytes : sizes) {
    reportProgress(r.rank, "all-reduce of " + std::to_string(bytes) + " bytes");
    const double device = timeAllReduce(r, dsend, drecv, bytes, true, &error);
    const double host = timeAllReduce(r, hsend.data(), hrecv.data(), bytes, false, &error);
    if (!error.empty()) break;
    if (r.rank == 0)
      printf("RESULT gpu_staged_bench allreduce %zu device_us %.2f host_us %.2f\n", bytes, device * 1e6, host * 1e6);
  }
  // Measured while the other rank waits at the barrier: the copy engine is the GPU's alone.
  error += apiFailure("barrier", collBarrier(r.comm, nullptr), r.comm);
  if (r.rank == 0 && error.empty())
    printf("RESULT gpu_staged_bench d2h_copy_bytes_per_s %.3e\n", deviceToHostRate(r, dsend, maxBytes));
  error += apiFailure("barrier", collBarrier(r.comm, nullptr), r.comm);
  fflush(stdout);
  cudaFree(dsend);
  cudaFree(drecv);
  if (!error.empty()) return {error};
  return {};
}

}  // namespace colltest
