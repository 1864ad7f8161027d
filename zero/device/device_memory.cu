// The ZeRO layer's device-memory checks, accumulation and copies (device_memory.h). The add kernel
// is built with -fmad=false like the step's (zero/CMakeLists.txt), although it multiplies nothing.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/cuda_device.h"
#include "common/error.h"
#include "zero/device/device_memory.h"

namespace coll {
namespace zero {
namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 4096;

__global__ void addKernel(void* dst, const void* src, size_t count, collDataType_t type) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    if (type == collFloat32) {
      static_cast<float*>(dst)[i] += static_cast<const float*>(src)[i];
    } else if (type == collBfloat16) {
      auto* d = static_cast<__nv_bfloat16*>(dst);
      d[i] = __float2bfloat16_rn(__bfloat162float(d[i]) + __bfloat162float(static_cast<const __nv_bfloat16*>(src)[i]));
    } else {
      auto* d = static_cast<__half*>(dst);
      d[i] = __float2half_rn(__half2float(d[i]) + __half2float(static_cast<const __half*>(src)[i]));
    }
  }
}

void checkOnDevice(const char* function, const NamedBuffer& buffer, int device) {
  if (buffer.pointer == nullptr) return;
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, buffer.pointer);
  if (status != cudaSuccess) {
    cudaGetLastError();  // leave no sticky error for the caller's next CUDA call
    throwError(collInvalidArgument, "%s: %s %p: cudaPointerGetAttributes failed (%s): expected device memory of GPU %d",
               function, buffer.name, buffer.pointer, cudaGetErrorString(status), device);
  }
  const bool onDevice = attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  if (!onDevice || attributes.device != device)
    throwError(collInvalidArgument,
               "%s: %s %p is %s: expected device memory of GPU %d, the stream's (host buffers take a NULL stream)",
               function, buffer.name, buffer.pointer,
               onDevice ? ("memory of GPU " + std::to_string(attributes.device)).c_str() : "host memory", device);
}

void checkLaunched(const char* function, const char* what) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throwError(collUnhandledCudaError, "%s: %s failed: %s", function, what, cudaGetErrorString(status));
}

}  // namespace

int checkStreamBuffers(const char* function, void* stream, std::initializer_list<NamedBuffer> buffers) {
  std::string why;
  if (!cudaDeviceAvailable(&why))
    throwError(collInvalidUsage, "%s: stream %p given, but there is no GPU to run on (%s): expected a NULL stream",
               function, stream, why.c_str());
  const int device = streamDevice(stream);
  CurrentDeviceScope onDevice(device);
  for (const NamedBuffer& buffer : buffers) checkOnDevice(function, buffer, device);
  return device;
}

void addOnStream(const char* function, void* dst, const void* src, size_t count, collDataType_t datatype,
                 void* stream) {
  if (count == 0) return;
  CurrentDeviceScope onDevice(streamDevice(stream));
  const size_t blocks = std::min(kMaxBlocks, (count + kThreads - 1) / kThreads);
  addKernel<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(dst, src, count,
                                                                                               datatype);
  checkLaunched(function, "the accumulation's kernel");
}

void copyOnStream(const char* function, void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0 || dst == src) return;
  CurrentDeviceScope onDevice(streamDevice(stream));
  cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream));
  checkLaunched(function, "cudaMemcpyAsync of the rank's own piece");
}

}  // namespace zero
}  // namespace coll
