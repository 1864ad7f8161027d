// What bounds a device wait: "no progress for T", not "the kernel has run for T"
// (kernels/cuda/device_sync.cuh, WaitBound). Two runs of 2 ranks as threads sharing GPU 0
// (concurrent kernels), each with a second engine over the same channels whose kernels get a
// short bound:
//  - moving: an all-reduce of 1.5 GiB of int32 is timed on the ordinary engine (D ms), then run
//    on an engine whose waits are bounded by T = D/4: the call lasts about 4 T in all, every
//    wait is short, so it must succeed, with the right values and no device error;
//  - stalled: rank 0 makes a 4 MiB all-reduce on an engine bounded by 300 ms that rank 1 never
//    joins: rank 0's kernel must end with a device error once that bound has passed (not hang, not
//    end at once).
// Prints "RESULT gpu_progress <check>: PASS|FAIL ..."; exits 0, 1 on a failure, 77 without a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "src/exec/device_engine.h"
#include "src/plan/device_program.h"
#include "tests/cuda/gpu_ranks.h"

namespace {

using colltest::GpuRank;
using Clock = std::chrono::steady_clock;

constexpr size_t kMovingBytes = size_t(1536) << 20;  // below 2 GiB: byte offsets fit in 31 bits
constexpr size_t kStalledBytes = size_t(4) << 20;
constexpr int kStalledBoundMs = 300;
constexpr int kStalledMarginMs = 3000;  // the host sees the end a poll after the kernel's report

coll::DeviceProgram planAllReduce(const GpuRank& rank, void* send, void* recv, size_t count) {
  return colltest::planSumAllReduce(rank, collInt32, sizeof(int32_t), send, recv, count);
}

// Milliseconds the stream took over one all-reduce on `engine` (events around the launch).
float timedCall(GpuRank& rank, coll::DeviceEngine& engine, const coll::DeviceProgram& program, void* send, void* recv) {
  cudaEvent_t start = nullptr, end = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&end);
  cudaEventRecord(start, rank.stream);
  engine.enqueue(program, collInt32, collSum, send, recv, rank.stream);
  cudaEventRecord(end, rank.stream);
  cudaEventSynchronize(end);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, end);
  cudaEventDestroy(start);
  cudaEventDestroy(end);
  return ms;
}

// Every byte of rank r's input is r + 1, so every byte of the sum is n (n + 1) / 2: checked at
// the start, the end and a stride through the buffer (downloading 1.5 GiB would take longer
// than the call).
std::string checkSamples(GpuRank& rank, const void* recv, size_t bytes) {
  const unsigned char expected = static_cast<unsigned char>(rank.nranks * (rank.nranks + 1) / 2);
  constexpr size_t kSample = 64 << 10;
  unsigned char* host = nullptr;
  if (cudaMallocHost(&host, kSample) != cudaSuccess) return "cudaMallocHost failed";
  std::string failure;
  for (size_t at = 0; at < bytes && failure.empty(); at += bytes / 16) {
    const size_t from = std::min(at, bytes - kSample);
    cudaMemcpyAsync(host, static_cast<const char*>(recv) + from, kSample, cudaMemcpyDeviceToHost, rank.stream);
    cudaStreamSynchronize(rank.stream);
    for (size_t i = 0; i < kSample; ++i)
      if (host[i] != expected) {
        failure = "byte " + std::to_string(from + i) + " is " + std::to_string(host[i]) + ", expected " +
                  std::to_string(expected);
        break;
      }
  }
  cudaFreeHost(host);
  return failure;
}

std::vector<std::string> moving(GpuRank& rank) {
  const size_t count = kMovingBytes / sizeof(int32_t);
  void *send = nullptr, *recv = nullptr;
  if (cudaMalloc(&send, kMovingBytes) != cudaSuccess || cudaMalloc(&recv, kMovingBytes) != cudaSuccess)
    return {"cudaMalloc of 2 x 1.5 GiB failed"};
  cudaMemsetAsync(send, rank.rank + 1, kMovingBytes, rank.stream);
  cudaStreamSynchronize(rank.stream);
  const coll::DeviceProgram program = planAllReduce(rank, send, recv, count);
  std::vector<std::string> failures;
  // D: the call's time on the ordinary engine (the second of two: the first loads the module).
  colltest::meetRanks(rank, "progress/calibrate/0");
  timedCall(rank, *rank.engine, program, send, recv);
  colltest::meetRanks(rank, "progress/calibrate/1");
  const float ordinaryMs = timedCall(rank, *rank.engine, program, send, recv);
  // Every rank uses rank 0's D, so that all bound their waits alike.
  if (rank.rank == 0) {
    const std::string bound = std::to_string(std::max(1, static_cast<int>(ordinaryMs / 4)));
    rank.store->set("progress/bound", coll::bootstrap::Bytes(bound.begin(), bound.end()));
  }
  const coll::bootstrap::Bytes bound = rank.store->get(
      "progress/bound", coll::Clock::now() + std::chrono::milliseconds(colltest::GpuJob::defaultTimeoutMs()));
  const int boundMs = std::stoi(std::string(bound.begin(), bound.end()));
  {
    coll::Params params;
    coll::DeviceEngine bounded(*rank.domain, rank.rank, rank.nranks, params, boundMs);
    cudaMemsetAsync(recv, 0xEE, kMovingBytes, rank.stream);  // poisoned
    colltest::meetRanks(rank, "progress/moving");
    const float boundedMs = timedCall(rank, bounded, program, send, recv);
    std::string message;
    const collResult_t error = bounded.pollError(&message);
    std::string values = checkSamples(rank, recv, kMovingBytes);
    const bool longer = boundedMs > 2.0f * boundMs;
    const bool pass = error == collSuccess && values.empty() && longer;
    printf(
        "RESULT gpu_progress moving rank %d: %s (1.5 GiB all-reduce: %.1f ms with waits bounded by %d ms; "
        "%.1f ms on the ordinary engine)%s%s%s\n",
        rank.rank, pass ? "PASS" : "FAIL", boundedMs, boundMs, ordinaryMs,
        error != collSuccess ? ("; device error: " + message).c_str() : "",
        values.empty() ? "" : ("; wrong values: " + values).c_str(),
        longer ? "" : "; the call was not longer than twice the bound, so it proves nothing");
    fflush(stdout);
    if (!pass) failures.push_back("moving: see the RESULT line");
    colltest::meetRanks(rank, "progress/moving/done");
  }
  cudaFree(send);
  cudaFree(recv);
  return failures;
}

std::vector<std::string> stalled(GpuRank& rank) {
  const size_t count = kStalledBytes / sizeof(int32_t);
  void *send = nullptr, *recv = nullptr;
  if (cudaMalloc(&send, kStalledBytes) != cudaSuccess || cudaMalloc(&recv, kStalledBytes) != cudaSuccess)
    return {"cudaMalloc failed"};
  cudaMemsetAsync(send, rank.rank + 1, kStalledBytes, rank.stream);
  cudaStreamSynchronize(rank.stream);
  std::vector<std::string> failures;
  {
    coll::Params params;
    coll::DeviceEngine bounded(*rank.domain, rank.rank, rank.nranks, params, kStalledBoundMs);
    colltest::meetRanks(rank, "progress/stalled");
    if (rank.rank == 0) {
      // Rank 1 never joins: these channels are not used again (their slots are out of step).
      const auto start = Clock::now();
      bounded.enqueue(planAllReduce(rank, send, recv, count), collInt32, collSum, send, recv, rank.stream);
      const cudaError_t streamStatus = cudaStreamSynchronize(rank.stream);
      const long ms =
          static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
      std::string message;
      const collResult_t error = bounded.pollError(&message);
      const bool pass = streamStatus == cudaSuccess && error != collSuccess && ms >= kStalledBoundMs &&
                        ms <= kStalledBoundMs + kStalledMarginMs;
      printf(
          "RESULT gpu_progress stalled: %s (a peer that never joins: the kernel ended after %ld ms, "
          "bound %d ms; error %d: %s; stream %s)\n",
          pass ? "PASS" : "FAIL", ms, kStalledBoundMs, static_cast<int>(error), message.c_str(),
          cudaGetErrorString(streamStatus));
      fflush(stdout);
      if (!pass) failures.push_back("stalled: see the RESULT line");
    }
    colltest::meetRanks(rank, "progress/stalled/done");
  }
  cudaFree(send);
  cudaFree(recv);
  return failures;
}

}  // namespace

int main() {
  if (colltest::skipWithoutGpu()) return 77;
  int failed = 0;
  for (const auto& [name, body] : {std::pair<const char*, colltest::GpuRankBody>{"moving", moving},
                                   std::pair<const char*, colltest::GpuRankBody>{"stalled", stalled}}) {
    colltest::GpuJob job;
    job.nranks = 2;
    const std::vector<std::string> failures = colltest::runGpuRanksAsThreads(job, body);
    for (const std::string& f : failures) printf("FAIL %s: %s\n", name, f.c_str());
    failed += failures.empty() ? 0 : 1;
  }
  return failed == 0 ? 0 : 1;
}
