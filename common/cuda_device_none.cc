// cuda_device.h without CUDA support compiled in: never a device.
#include "common/cuda_device.h"

namespace coll {

bool cudaCompiledIn() { return false; }

bool cudaDeviceAvailable(std::string* why) {
  if (why != nullptr)
    *why = "this build of libcollective has no CUDA support (COLL_WITH_CUDA=OFF or no nvcc at build time)";
  return false;
}

}  // namespace coll
