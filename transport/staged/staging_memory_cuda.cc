// A GPU's staging memory (staging_memory.h): pinned host memory mapped into the device's
// addresses for the slots (the kernels write what they send there over PCIe, and reduce straight
// from what the proxy landed there), device memory for the kernels' own words. Built with CUDA.
#include <cuda_runtime.h>

#include <cstring>

#include "common/cuda_check.h"
#include "common/error.h"
#include "common/hash.h"
#include "kernels/cuda/launch.h"
#include "transport/setup_stream.h"
#include "transport/staged/staging_memory.h"

namespace coll {
namespace transport {
namespace {

class CudaStagingMemory final : public StagingMemory {
 public:
  explicit CudaStagingMemory(int device) : device_(device) { COLL_CUDACHECK(cudaSetDevice(device_)); }

  MappedBlock allocateMapped(size_t bytes) override {
    void* host = nullptr;
    // Portable: any context of the process may map it (the caller's runtime and ours share the
    // primary context, but a user may switch contexts).
    COLL_CUDACHECK(cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    std::memset(host, 0, bytes);
    void* device = nullptr;
    const cudaError_t rc = cudaHostGetDevicePointer(&device, host, 0);
    if (rc != cudaSuccess) {
      cudaFreeHost(host);
      COLL_CUDACHECK(rc);
    }
    return MappedBlock{static_cast<char*>(host), static_cast<char*>(device), bytes};
  }
  void freeMapped(const MappedBlock& block) noexcept override {
    if (block.host != nullptr) cudaFreeHost(block.host);
  }
  void* allocateDevice(size_t bytes) override {
    void* memory = nullptr;
    COLL_CUDACHECK(cudaMalloc(&memory, bytes));
    const SetupStream setup;
    COLL_CUDACHECK(cudaMemsetAsync(memory, 0, bytes, setup.get()));
    setup.finish();
    return memory;
  }
  void freeDevice(void* memory) noexcept override {
    if (memory != nullptr) cudaFree(memory);
  }
  void copyToDevice(void* destination, const void* source, size_t bytes) override {
    const SetupStream setup;
    COLL_CUDACHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyHostToDevice, setup.get()));
    setup.finish();
  }
  uint64_t gpuIdentity() override {
    char bus[64] = {};
    COLL_CUDACHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, device_));
    return Fnv1a().add(std::string(bus)).value();
  }
  bool mpsClient() override {
    int mps = 0;
    // Older drivers do not know the attribute: then not an MPS client, the safe answer.
    if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, device_) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return mps != 0;
  }
  int residentBlocks() override {
    int sms = 0;
    COLL_CUDACHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_));
    return sms * device::scheduleKernelBlocksPerSm();
  }
  std::string describe() override { return formatString("pinned host memory mapped by GPU %d", device_); }

 private:
  int device_;
};

}  // namespace

std::unique_ptr<StagingMemory> makeDeviceStagingMemory(int device) {
  return std::make_unique<CudaStagingMemory>(device);
}

}  // namespace transport
}  // namespace coll
