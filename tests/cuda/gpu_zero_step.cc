// The ZeRO optimizer step on device memory (collZeroOptimizerStepOnStream) against the host step
// (collZeroOptimizerStep): every optimizer and precision of the host step's tests
// (tests/zero/optimizer_cases.h), five steps each at counts from 0 to past a million, master
// weights, state and the low-precision model copy compared bit for bit, and guard bytes around
// every device buffer; the squared norm (collZeroSquaredNormOnStream) against the host's, the same
// bits on a second run; a host buffer with a stream is refused before anything is written; then the
// step's speed against the GPU's copy rate measured in the same run (the step must read and write
// the bytes it touches once: its roofline is those bytes at the rate a device-to-device copy reads
// and writes). Prints "RESULT gpu_zero_step ..." lines; exits 0, 1 on a failure, 77 without a GPU.
//
// usage: gpu_zero_step [--quick | --small]
//   --quick: counts up to 100003 and a 32 Mi-element measurement; --small: counts up to 1037 and no
//   measurement (for compute-sanitizer)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collective_zero.h"
#include "tests/cuda/gpu_ranks.h"
#include "tests/zero/optimizer_cases.h"

namespace {

using namespace zerotest;

constexpr size_t kGuardBytes = 256;
constexpr unsigned char kGuardByte = 0xA7;

// Device memory with poisoned guard bytes on both sides of `bytes`.
class GuardedDevice {
 public:
  explicit GuardedDevice(size_t bytes) : bytes_(bytes) {
    if (cudaMalloc(&base_, bytes + 2 * kGuardBytes) == cudaSuccess)
      cudaMemset(base_, kGuardByte, bytes + 2 * kGuardBytes);
  }
  ~GuardedDevice() { cudaFree(base_); }
  GuardedDevice(const GuardedDevice&) = delete;
  GuardedDevice& operator=(const GuardedDevice&) = delete;
  bool ok() const { return base_ != nullptr; }
  void* data() const { return static_cast<char*>(base_) + kGuardBytes; }
  void upload(const void* from) const { cudaMemcpy(data(), from, bytes_, cudaMemcpyHostToDevice); }
  void download(void* to) const { cudaMemcpy(to, data(), bytes_, cudaMemcpyDeviceToHost); }
  bool guardsIntact() const {
    std::vector<unsigned char> head(kGuardBytes), tail(kGuardBytes);
    cudaMemcpy(head.data(), base_, kGuardBytes, cudaMemcpyDeviceToHost);
    cudaMemcpy(tail.data(), static_cast<char*>(base_) + kGuardBytes + bytes_, kGuardBytes, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < kGuardBytes; ++i)
      if (head[i] != kGuardByte || tail[i] != kGuardByte) return false;
    return true;
  }

 private:
  void* base_ = nullptr;
  size_t bytes_;
};

// Five steps on the host and on the device from the same start; "" when every bit agrees.
std::string compareCase(const NamedConfig& nc, const Precision& precision, size_t count, cudaStream_t stream) {
  collZeroStepConfig_t config = nc.config;
  config.gradScale = 1.0 / precision.lossScale;
  const bool withParamOut = precision.paramType != collFloat32;
  StepOutputs host = stepStart(count);
  StepOutputs device = stepStart(count);
  const size_t gradBytes = count * typeSize(precision.gradType);
  GuardedDevice master(count * 4), state0(count * 4), state1(count * 4), grad(gradBytes), paramOut(count * 2);
  if (!master.ok() || !state0.ok() || !state1.ok() || !grad.ok() || !paramOut.ok()) return "cudaMalloc failed";
  master.upload(device.master.data());
  state0.upload(device.state0.data());
  state1.upload(device.state1.data());
  TypedBuffer gradients(precision.gradType, count);
  for (int s = 1; s <= 5; ++s) {
    config.step = s;
    for (size_t i = 0; i < count; ++i) gradients.set(i, gradient(s, i) * precision.lossScale);
    if (collZeroOptimizerStep(&config, host.master.data(), gradients.data(), precision.gradType, host.state0.data(),
                              host.state1.data(), withParamOut ? host.paramOut.data() : nullptr, precision.paramType,
                              count) != collSuccess)
      return std::string("host step failed: ") + collGetLastError(nullptr);
    cudaStreamSynchronize(stream);  // the previous step has read the gradients
    grad.upload(gradients.data());
    const collResult_t rc =
        collZeroOptimizerStepOnStream(&config, static_cast<float*>(master.data()), grad.data(), precision.gradType,
                                      static_cast<float*>(state0.data()), static_cast<float*>(state1.data()),
                                      withParamOut ? paramOut.data() : nullptr, precision.paramType, count, stream);
    if (rc != collSuccess) return std::string("device step failed: ") + collGetLastError(nullptr);
  }
  if (cudaStreamSynchronize(stream) != cudaSuccess)
    return std::string("stream: ") + cudaGetErrorString(cudaGetLastError());
  master.download(device.master.data());
  state0.download(device.state0.data());
  state1.download(device.state1.data());
  if (withParamOut) paramOut.download(device.paramOut.data());
  std::string problem = outputDifferences(device, host);
  if (!master.guardsIntact() || !state0.guardsIntact() || !state1.guardsIntact() || !grad.guardsIntact() ||
      !paramOut.guardsIntact())
    problem += " a guard byte changed";
  return problem;
}

// A host buffer with a stream: collInvalidArgument naming it, and nothing written on the device.
std::string refusesHostBuffers(cudaStream_t stream) {
  const size_t count = 1000;
  collZeroStepConfig_t config = adam(collZeroAdamW, 0.01);
  config.step = 1;
  GuardedDevice state0(count * 4), state1(count * 4), grad(count * 4);
  std::vector<float> hostMaster(count, 1.0f), zeros(count, 0.0f), after(count);
  state0.upload(zeros.data());
  const collResult_t rc = collZeroOptimizerStepOnStream(
      &config, hostMaster.data(), grad.data(), collFloat32, static_cast<float*>(state0.data()),
      static_cast<float*>(state1.data()), nullptr, collFloat32, count, stream);
  const std::string message = collGetLastError(nullptr);
  cudaStreamSynchronize(stream);
  state0.download(after.data());
  if (rc != collInvalidArgument) return "a host master with a stream returned " + std::to_string(int(rc));
  if (message.find("master") == std::string::npos || message.find("host memory") == std::string::npos)
    return "the refusal does not name master as host memory: " + message;
  if (after != zeros || hostMaster != std::vector<float>(count, 1.0f)) return "the refused call wrote a buffer";
  return "";
}

// The squared norm on the device against the host's (within rounding: the orders differ), twice
// for the same bits, every float type and count, and an infinity flagged.
std::string compareNorms(cudaStream_t stream) {
  std::string problems;
  for (collDataType_t type : {collFloat32, collFloat16, collBfloat16})
    for (size_t count : {size_t(0), size_t(1), size_t(1037), size_t(100003), (size_t(1) << 20) + 3}) {
      TypedBuffer data(type, count);
      for (size_t i = 0; i < count; ++i) data.set(i, gradient(2, i) * 64.0);
      if (count > 0 && type != collFloat32) data.set(count / 2, 1e30);  // past half's and within bfloat16's range
      double want = 0;
      int wantFlag = 0;
      collZeroSquaredNorm(data.data(), type, count, &want, &wantFlag);
      GuardedDevice input(count * typeSize(type)), results(2 * sizeof(double) + 2 * sizeof(int));
      input.upload(data.data());
      auto* sums = static_cast<double*>(results.data());
      auto* flags = reinterpret_cast<int*>(sums + 2);
      for (int run = 0; run < 2; ++run)
        if (collZeroSquaredNormOnStream(input.data(), type, count, sums + run, flags + run, stream) != collSuccess)
          return std::string("norm failed: ") + collGetLastError(nullptr);
      cudaStreamSynchronize(stream);
      unsigned char bytes[2 * sizeof(double) + 2 * sizeof(int)];
      results.download(bytes);
      double got[2];
      int gotFlags[2];
      std::memcpy(got, bytes, sizeof got);
      std::memcpy(gotFlags, bytes + sizeof got, sizeof gotFlags);
      const std::string which = std::string(" ") + typeName(type) + " count " + std::to_string(count) + ":";
      if (std::memcmp(&got[0], &got[1], sizeof(double)) != 0) problems += which + " two runs differ";
      const bool close = std::isinf(want) ? got[0] == want : std::fabs(got[0] - want) <= 1e-12 * std::fabs(want);
      if (!close) problems += which + " " + std::to_string(got[0]) + " against the host's " + std::to_string(want);
      if (gotFlags[0] != wantFlag) problems += which + " nonFinite " + std::to_string(gotFlags[0]);
      if (!input.guardsIntact() || !results.guardsIntact()) problems += which + " a guard byte changed";
    }
  return problems;
}

double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds of one run of `launch` on `stream`, the median of `runs` after two warm-ups.
template <class Launch>
double timeOn(cudaStream_t stream, int runs, Launch&& launch) {
  cudaEvent_t begin, end;
  cudaEventCreate(&begin);
  cudaEventCreate(&end);
  for (int i = 0; i < 2; ++i) launch();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    cudaEventRecord(begin, stream);
    launch();
    cudaEventRecord(end, stream);
    cudaEventSynchronize(end);
    float t = 0;
    cudaEventElapsedTime(&t, begin, end);
    ms.push_back(t);
  }
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  return medianOf(ms);
}

// AdamW with float32 gradients and a bfloat16 model copy: master and both moments read and
// written, the gradient read, the copy written: 30 bytes an element.
bool measure(size_t count, cudaStream_t stream) {
  GuardedDevice master(count * 4), state0(count * 4), state1(count * 4), grad(count * 4), paramOut(count * 2);
  if (!master.ok() || !state0.ok() || !state1.ok() || !grad.ok() || !paramOut.ok()) {
    printf("RESULT gpu_zero_step measurement FAIL (cudaMalloc of %zu elements)\n", count);
    return false;
  }
  for (const GuardedDevice* d : {&master, &state0, &state1, &grad}) cudaMemset(d->data(), 0, count * 4);
  collZeroStepConfig_t config = adam(collZeroAdamW, 0.01);
  config.step = 1;
  bool failed = false;
  const double stepMs = timeOn(stream, 10, [&] {
    failed |= collZeroOptimizerStepOnStream(&config, static_cast<float*>(master.data()), grad.data(), collFloat32,
                                            static_cast<float*>(state0.data()), static_cast<float*>(state1.data()),
                                            paramOut.data(), collBfloat16, count, stream) != collSuccess;
  });
  const size_t copyBytes = count * 4;
  const double copyMs = timeOn(
      stream, 10, [&] { cudaMemcpyAsync(state1.data(), state0.data(), copyBytes, cudaMemcpyDeviceToDevice, stream); });
  const double stepBytes = 30.0 * double(count);
  // A copy of N bytes reads N and writes N.
  const double copyRate = 2.0 * double(copyBytes) / (copyMs * 1e-3);
  const double boundMs = stepBytes / copyRate * 1e3;
  printf("RESULT gpu_zero_step step_time %.3f ms (AdamW, %zu elements, float32 gradients, bfloat16 copy: %.0f MB)\n",
         stepMs, count, stepBytes / 1e6);
  printf("RESULT gpu_zero_step copy_rate %.1f GB/s read+written (cudaMemcpy D2D of %zu bytes: %.3f ms)\n",
         copyRate / 1e9, copyBytes, copyMs);
  printf("RESULT gpu_zero_step of_bandwidth_bound %.2f (bound %.3f ms / step %.3f ms)\n", boundMs / stepMs, boundMs,
         stepMs);
  if (failed) printf("RESULT gpu_zero_step measurement FAIL: %s\n", collGetLastError(nullptr));
  return !failed;
}

}  // namespace

int main(int argc, char** argv) {
  if (colltest::skipWithoutGpu()) return 77;
  bool quick = false, small = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--small") == 0) {
      small = true;
    } else {
      fprintf(stderr, "usage: gpu_zero_step [--quick | --small]\n");
      return 2;
    }
  }
  cudaStream_t stream;
  if (cudaStreamCreate(&stream) != cudaSuccess) {
    printf("RESULT gpu_zero_step FAIL cudaStreamCreate: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  int cases = 0, failures = 0;
  std::vector<size_t> counts{0, 1, 1037};
  if (!small) counts.push_back(100003);
  if (!small && !quick) counts.push_back((size_t(1) << 20) + 3);
  for (size_t count : counts)
    for (const NamedConfig& nc : configs())
      for (const Precision& precision : kPrecisions) {
        ++cases;
        const std::string problem = compareCase(nc, precision, count, stream);
        if (problem.empty()) continue;
        ++failures;
        printf("FAIL %s:%s\n", caseName(nc, precision, count).c_str(), problem.c_str());
      }
  printf("RESULT gpu_zero_step bit_for_bit %s (%d cases, %d failed)\n", failures == 0 ? "PASS" : "FAIL", cases,
         failures);
  const std::string norms = compareNorms(stream);
  printf("RESULT gpu_zero_step squared_norm %s%s\n", norms.empty() ? "PASS" : "FAIL:", norms.c_str());
  const std::string refusal = refusesHostBuffers(stream);
  printf("RESULT gpu_zero_step refusal %s%s\n", refusal.empty() ? "PASS" : "FAIL: ", refusal.c_str());
  const bool measured = small || measure(quick ? size_t(32) << 20 : size_t(128) << 20, stream);
  cudaStreamDestroy(stream);
  return failures == 0 && norms.empty() && refusal.empty() && measured ? 0 : 1;
}
