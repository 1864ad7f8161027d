// The CUDA build of cuda_device.h. cudaGetDeviceCount initializes the runtime but creates no
// context, so asking costs no GPU memory; the static runtime reports a missing driver
// (libcuda.so.1) as an error here instead of failing to load.
#include "common/cuda_device.h"

#include <cuda_runtime.h>

#include <mutex>

namespace coll {

bool cudaCompiledIn() { return true; }

bool cudaDeviceAvailable(std::string* why) {
  static std::once_flag once;
  static bool available = false;
  static std::string reason;
  std::call_once(once, [] {
    int count = 0;
    const cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess) {
      reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc);
      cudaGetLastError();  // not sticky, but leave nothing behind for the caller's own checks
    } else if (count == 0) {
      reason = "the CUDA driver reports no device";
    } else {
      available = true;
    }
  });
  if (!available && why != nullptr) *why = reason;
  return available;
}

}  // namespace coll
