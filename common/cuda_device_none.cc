// cuda_device.h without CUDA support compiled in: never a device, and nothing to save or restore.
#include "common/cuda_device.h"

#include "common/error.h"

namespace coll {

bool cudaCompiledIn() { return false; }

bool cudaDeviceAvailable(std::string* why) {
  if (why != nullptr)
    *why = "this build of libcollective has no CUDA support (COLL_WITH_CUDA=OFF or no nvcc at build time)";
  return false;
}

int currentContextDevice() { return -1; }

int streamDevice(void*) {
  throwError(collInvalidUsage, "no CUDA device: this build of libcollective has no CUDA support");
}

CurrentDeviceScope::CurrentDeviceScope(int) {}
CurrentDeviceScope::~CurrentDeviceScope() = default;

void* cudaDriverFunction(const char*, int) { return nullptr; }

bool isDeviceOnlyMemory(const void*, int*) { return false; }

bool cudaContextIsCurrent() { return false; }

std::string cudaDeviceBusId(int) { return ""; }

int cudaDeviceOfBusId(const std::string&) { return -1; }

bool cudaCanAccessPeerByBusId(int, const std::string&) { return false; }

}  // namespace coll
