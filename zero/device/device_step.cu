// The sharded optimizer step as one CUDA kernel: a grid-stride loop whose every thread widens its
// gradient, runs the element of step_element.h (the host loops' arithmetic, element by element)
// and writes the master weight, the state and the low-precision model copy. One pass over the
// five arrays, which is all the memory the step must touch. This file is compiled with
// -fmad=false (zero/CMakeLists.txt): a fused multiply-add rounds once where the host rounds twice.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/cuda_device.h"
#include "common/error.h"
#include "zero/device/device_memory.h"
#include "zero/device/device_step.h"
#include "zero/step_element.h"

namespace coll {
namespace zero {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU several times over; the grid-stride loop covers the rest.
constexpr size_t kMaxBlocks = 4096;

__device__ float widen(const void* data, collDataType_t type, size_t i) {
  if (type == collFloat32) return static_cast<const float*>(data)[i];
  const uint16_t bits = static_cast<const uint16_t*>(data)[i];
  if (type == collBfloat16) return __bfloat162float(__ushort_as_bfloat16(bits));
  return __half2float(__ushort_as_half(bits));
}

__device__ uint16_t narrow(float value, collDataType_t type) {
  if (type == collBfloat16) return __bfloat16_as_ushort(__float2bfloat16_rn(value));
  return __half_as_ushort(__float2half_rn(value));
}

__global__ void stepKernel(StepScalars s, float* master, const void* grad, collDataType_t gradType, float* state0,
                           float* state1, uint16_t* paramOut, collDataType_t paramType, size_t count) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    stepElement(s, master, widen(grad, gradType, i) * s.gradScale, state0, state1, i);
    if (paramOut != nullptr) paramOut[i] = narrow(master[i], paramType);
  }
}

// The squared norm in two kernels, in an order that depends on the count alone: thread t of the
// first grid (kNormBlocks x kThreads, whatever the GPU) sums elements t, t + kNormThreads, ... in
// double, each block folds its threads' sums as a tree into one partial, and one block of the
// second kernel folds the partials the same way.
constexpr int kNormBlocks = 256;
constexpr size_t kNormThreads = size_t(kNormBlocks) * kThreads;

__device__ double foldBlock(double own, double* shared) {
  shared[threadIdx.x] = own;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  return shared[0];
}

__global__ void squaresKernel(const void* data, collDataType_t type, size_t count, double* partials) {
  __shared__ double shared[kThreads];
  double sum = 0.0;
  for (size_t i = size_t(blockIdx.x) * kThreads + threadIdx.x; i < count; i += kNormThreads) {
    const double g = widen(data, type, i);
    sum += g * g;
  }
  const double blockSum = foldBlock(sum, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = blockSum;
}

__global__ void foldPartialsKernel(const double* partials, double* sumOfSquares, int* nonFinite) {
  __shared__ double shared[kThreads];
  const double own = int(threadIdx.x) < kNormBlocks ? partials[threadIdx.x] : 0.0;
  const double total = foldBlock(own, shared);
  if (threadIdx.x == 0) {
    *sumOfSquares = total;
    *nonFinite = isfinite(total) ? 0 : 1;
  }
}

static_assert(kNormBlocks <= kThreads, "one block folds every partial");

}  // namespace

void squaredNormOnStream(const char* function, const void* data, collDataType_t datatype, size_t count,
                         double* sumOfSquares, int* nonFinite, void* stream) {
  CurrentDeviceScope onDevice(
      checkStreamBuffers(function, stream, {{data, "data"}, {sumOfSquares, "sumOfSquares"}, {nonFinite, "nonFinite"}}));
  const auto cudaStream = static_cast<cudaStream_t>(stream);
  // Stream-ordered scratch: no device-wide synchronization, which a peer's kernel could wait on.
  void* partials = nullptr;
  cudaError_t status = cudaMallocAsync(&partials, kNormBlocks * sizeof(double), cudaStream);
  if (status != cudaSuccess)
    throwError(collUnhandledCudaError, "%s: cudaMallocAsync of %zu bytes failed: %s", function,
               kNormBlocks * sizeof(double), cudaGetErrorString(status));
  squaresKernel<<<kNormBlocks, kThreads, 0, cudaStream>>>(data, datatype, count, static_cast<double*>(partials));
  foldPartialsKernel<<<1, kThreads, 0, cudaStream>>>(static_cast<double*>(partials), sumOfSquares, nonFinite);
  const cudaError_t launched = cudaGetLastError();
  cudaFreeAsync(partials, cudaStream);
  if (launched != cudaSuccess)
    throwError(collUnhandledCudaError, "%s: the norm's kernels did not launch: %s", function,
               cudaGetErrorString(launched));
}

void stepOnStream(const char* function, const StepScalars& scalars, float* master, const void* grad,
                  collDataType_t gradType, float* state0, float* state1, void* paramOut, collDataType_t paramType,
                  size_t count, void* stream) {
  CurrentDeviceScope onDevice(checkStreamBuffers(
      function, stream,
      {{master, "master"}, {grad, "grad"}, {state0, "state0"}, {state1, "state1"}, {paramOut, "paramOut"}}));
  if (count == 0) return;
  const size_t blocks = std::min(kMaxBlocks, (count + kThreads - 1) / kThreads);
  stepKernel<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      scalars, master, grad, gradType, state0, state1, static_cast<uint16_t*>(paramOut), paramType, count);
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess)
    throwError(collUnhandledCudaError, "%s: the step's kernel did not launch: %s", function,
               cudaGetErrorString(launched));
}

}  // namespace zero
}  // namespace coll
