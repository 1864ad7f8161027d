// The CUDA calls behind transport/ipc_buffer_cache.h: an allocation's key from the driver's pointer
// attributes (its range and its buffer id, which the driver never reuses within a process), its
// IPC handle, and opening and closing peers' handles.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstring>
#include <memory>

#include "common/cuda_check.h"
#include "common/cuda_device.h"
#include "common/error.h"
#include "transport/ipc_buffer_cache.h"
#include "transport/p2p/p2p_ipc_driver.h"

namespace coll {
namespace transport {
namespace {

using PointerGetAttributesFn = CUresult (*)(unsigned int, CUpointer_attribute*, void**, CUdeviceptr);

static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(IpcHandleBytes), "an IPC handle is 64 bytes");

class CudaIpcDriver final : public IpcDriver {
 public:
  CudaIpcDriver()
      : getAttributes_(reinterpret_cast<PointerGetAttributesFn>(cudaDriverFunction("cuPointerGetAttributes", 7000))) {
    if (getAttributes_ == nullptr)
      throwError(collUnhandledCudaError, "the CUDA driver has no cuPointerGetAttributes: no IPC of callers' buffers");
  }

  AllocationKey allocationOf(const void* pointer) override {
    CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                   CU_POINTER_ATTRIBUTE_BUFFER_ID};
    CUdeviceptr start = 0;
    size_t bytes = 0;
    unsigned long long id = 0;
    void* values[] = {&start, &bytes, &id};
    const CUresult rc = getAttributes_(3, which, values, reinterpret_cast<CUdeviceptr>(pointer));
    if (rc != CUDA_SUCCESS || start == 0 || id == 0)
      throwError(collInvalidUsage, "the buffer at %p is not device memory of a live allocation (CUresult %d)", pointer,
                 static_cast<int>(rc));
    return AllocationKey{static_cast<uint64_t>(start), static_cast<uint64_t>(bytes), static_cast<uint64_t>(id)};
  }

  IpcHandleBytes exportHandle(const AllocationKey& allocation) override {
    cudaIpcMemHandle_t handle;
    COLL_CUDACHECK(cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(allocation.base)));
    IpcHandleBytes bytes;
    memcpy(bytes.data(), &handle, bytes.size());
    return bytes;
  }

  void* open(const IpcHandleBytes& bytes) override {
    cudaIpcMemHandle_t handle;
    memcpy(&handle, bytes.data(), bytes.size());
    void* mapped = nullptr;
    COLL_CUDACHECK(cudaIpcOpenMemHandle(&mapped, handle, cudaIpcMemLazyEnablePeerAccess));
    return mapped;
  }

  void close(void* mapped) noexcept override { cudaIpcCloseMemHandle(mapped); }

 private:
  PointerGetAttributesFn getAttributes_;
};

}  // namespace

std::unique_ptr<IpcDriver> makeCudaIpcDriver() { return std::make_unique<CudaIpcDriver>(); }

}  // namespace transport
}  // namespace coll
