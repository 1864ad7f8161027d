// GPU measurements through the device path (P2P domain, device programs, kernels), for
// tools/gpu_check.sh: all-reduce of 256 MiB of floats on 4 ranks sharing one GPU (threads and
// processes), set against a device-to-device cudaMemcpy of the same size measured in the same
// run, and the latency of an 8-byte all-reduce. Prints "RESULT name value unit" lines; exits 77
// without a GPU.
//
// usage: gpu_bench [--ranks 4] [--bytes 268435456] [--modes threads,processes] [--algo COLL_ALGO] [--sweep]
// --sweep also times 8 B, 128 B, 2 KiB, ... (factor 16) up to --bytes: "RESULT label allreduce_sweep
// BYTES TIME us" lines, to see where the direct all-reduce overtakes the ring.
// --algo plans with those overrides ("allreduce:cma": the direct all-reduce, threads only); the
// labels then end in "_" and the text after the colon ("threads_n4_cma").
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/cuda/gpu_ranks.h"

namespace {

using colltest::GpuRank;
using Clock = std::chrono::steady_clock;

size_t gBytes = size_t(256) << 20;
std::string gLabel;
bool gSweep = false;  // --sweep: also every 16th power of two from 8 B to --bytes

double seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// Average seconds of one all-reduce of `count` floats over `iters` calls.
double timeAllReduce(GpuRank& rank, float* send, float* recv, size_t count, int iters, int tag) {
  const coll::DeviceProgram program = colltest::planSumAllReduce(rank, collFloat32, sizeof(float), send, recv, count);
  for (int i = 0; i < 3; ++i) colltest::enqueueProgram(rank, program, collFloat32, collSum, send, recv);
  cudaStreamSynchronize(rank.stream);
  colltest::meetRanks(rank, "bench/" + std::to_string(tag));
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) colltest::enqueueProgram(rank, program, collFloat32, collSum, send, recv);
  cudaStreamSynchronize(rank.stream);
  return seconds(start) / iters;
}

std::vector<std::string> bench(GpuRank& rank) {
  const size_t count = gBytes / sizeof(float);
  float *send = nullptr, *recv = nullptr;
  if (cudaMalloc(&send, gBytes) != cudaSuccess || cudaMalloc(&recv, gBytes) != cudaSuccess) return {"cudaMalloc"};
  cudaMemsetAsync(send, 0, gBytes, rank.stream);
  cudaStreamSynchronize(rank.stream);
  std::vector<std::string> failures;
  // The copy is measured while every other rank waits at the barriers around it: ranks share the
  // GPU, and a copy timed beside their setup read far below the copy's rate alone (8 ranks).
  colltest::meetRanks(rank, "bench/copy/before");
  if (rank.rank == 0) {
    // The physical reference: one device-to-device copy of the same size, on this GPU, now.
    for (int i = 0; i < 3; ++i) cudaMemcpyAsync(recv, send, gBytes, cudaMemcpyDeviceToDevice, rank.stream);
    cudaStreamSynchronize(rank.stream);
    const auto start = Clock::now();
    for (int i = 0; i < 10; ++i) cudaMemcpyAsync(recv, send, gBytes, cudaMemcpyDeviceToDevice, rank.stream);
    cudaStreamSynchronize(rank.stream);
    const double copy = seconds(start) / 10;
    printf("RESULT %s d2d_memcpy_bytes_per_s %.3e B/s (cudaMemcpy %zu bytes: %.1f us)\n", gLabel.c_str(), gBytes / copy,
           gBytes, copy * 1e6);
  }
  colltest::meetRanks(rank, "bench/copy/after");
  const double big = timeAllReduce(rank, send, recv, count, 10, 1);
  const double small = timeAllReduce(rank, send, recv, 2, 200, 2);
  // --sweep: where one algorithm overtakes another (8 B, 128 B, 2 KiB, ... up to --bytes).
  std::vector<std::pair<size_t, double>> sweep;
  if (gSweep)
    for (size_t bytes = 8; bytes <= gBytes; bytes *= 16) {
      const int iters = bytes <= (size_t(1) << 20) ? 100 : bytes <= (size_t(16) << 20) ? 20 : 5;
      sweep.emplace_back(bytes, timeAllReduce(rank, send, recv, bytes / sizeof(float), iters, 3 + int(sweep.size())));
    }
  std::string message;
  if (rank.engine->pollError(&message) != collSuccess) failures.push_back(message);
  if (rank.rank == 0) {
    const int n = rank.nranks;
    for (const auto& [bytes, time] : sweep)
      printf("RESULT %s allreduce_sweep %zu %.2f us\n", gLabel.c_str(), bytes, time * 1e6);
    const double busbw = gBytes / big * 2.0 * (n - 1) / n;
    printf("RESULT %s allreduce_time %.1f us (%zu bytes, %d ranks)\n", gLabel.c_str(), big * 1e6, gBytes, n);
    printf("RESULT %s allreduce_busbw %.3e B/s\n", gLabel.c_str(), busbw);
    printf("RESULT %s allreduce_8B_latency %.2f us\n", gLabel.c_str(), small * 1e6);
    fflush(stdout);
  }
  // cudaFree synchronizes the device: not while a peer's kernel may still read these buffers.
  colltest::meetRanks(rank, "bench/free");
  cudaFree(send);
  cudaFree(recv);
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* b = getenv("COLL_GPU_BENCH_BYTES")) gBytes = strtoull(b, nullptr, 0);
  if (const char* l = getenv("COLL_GPU_BENCH_LABEL")) gLabel = l;
  gSweep = getenv("COLL_GPU_BENCH_SWEEP") != nullptr;
  const std::map<std::string, colltest::GpuRankBody> bodies = {{"bench", bench}};
  if (int status = colltest::gpuRankChildMain(bodies); status >= 0) return status;
  int n = 4;
  std::vector<std::string> modes = {"threads", "processes"};
  std::string algo;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--ranks") && i + 1 < argc) {
      n = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--bytes") && i + 1 < argc) {
      gBytes = strtoull(argv[++i], nullptr, 0);
    } else if (!strcmp(argv[i], "--modes") && i + 1 < argc) {
      modes = colltest::splitCommaList(argv[++i]);
    } else if (!strcmp(argv[i], "--sweep")) {
      gSweep = true;
      setenv("COLL_GPU_BENCH_SWEEP", "1", 1);  // for the rank processes
    } else if (!strcmp(argv[i], "--algo") && i + 1 < argc) {
      algo = argv[++i];
      setenv("COLL_GPU_TEST_ALGO", algo.c_str(), 1);
    } else {
      fprintf(stderr,
              "usage: %s [--ranks 4] [--bytes 268435456] [--modes threads,processes] [--algo COLL_ALGO] [--sweep]\n",
              argv[0]);
      return 2;
    }
  }
  if (colltest::skipWithoutGpu()) return 77;
  setenv("COLL_GPU_BENCH_BYTES", std::to_string(gBytes).c_str(), 1);
  int failed = 0;
  for (const std::string& mode : modes) {
    gLabel = mode + "_n" + std::to_string(n) + (algo.empty() ? "" : "_" + algo.substr(algo.find(':') + 1));
    setenv("COLL_GPU_BENCH_LABEL", gLabel.c_str(), 1);
    colltest::GpuJob job;
    job.nranks = n;
    std::vector<std::string> failures = colltest::runGpuRanks(mode, job, "bench", bench);
    for (const std::string& f : failures) printf("FAIL %s: %s\n", gLabel.c_str(), f.c_str());
    failed += failures.empty() ? 0 : 1;
  }
  return failed == 0 ? 0 : 1;
}
