// The CUDA build of cuda_device.h. cudaGetDeviceCount initializes the runtime but creates no
// context, so asking costs no GPU memory; the static runtime reports a missing driver
// (libcuda.so.1) as an error here instead of failing to load. The current context is read and
// restored through the driver API (looked up at run time, no libcuda link): the runtime's
// cudaSetDevice would create a context on the device it restores, which the caller may never
// have used.
#include "common/cuda_device.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <mutex>

#include "common/error.h"

namespace coll {
namespace {

using CtxGetCurrentFn = CUresult (*)(CUcontext*);
using CtxSetCurrentFn = CUresult (*)(CUcontext);
using CtxGetDeviceFn = CUresult (*)(CUdevice*);
using StreamGetCtxFn = CUresult (*)(CUstream, CUcontext*);
using CtxPushPopFn = CUresult (*)(CUcontext);
using CtxPopFn = CUresult (*)(CUcontext*);

// The thread's current context, or nullptr for none (or a driver without the call).
CUcontext currentContext() {
  static const auto get = reinterpret_cast<CtxGetCurrentFn>(cudaDriverFunction("cuCtxGetCurrent", 4000));
  CUcontext context = nullptr;
  if (get == nullptr || get(&context) != CUDA_SUCCESS) return nullptr;
  return context;
}

}  // namespace

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

void* cudaDriverFunction(const char* name, int version) {
  if (!cudaDeviceAvailable()) return nullptr;  // no driver to ask
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &function, version, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return function;
}

// The device of the thread's current context, or -1.
int deviceOfCurrentContext() {
  static const auto getDevice = reinterpret_cast<CtxGetDeviceFn>(cudaDriverFunction("cuCtxGetDevice", 2000));
  CUdevice device = -1;
  if (getDevice == nullptr || getDevice(&device) != CUDA_SUCCESS) return -1;
  return static_cast<int>(device);
}

int currentContextDevice() {
  if (currentContext() == nullptr) return -1;
  return deviceOfCurrentContext();
}

// Through the stream's context (driver calls of CUDA 9.2 and earlier) rather than
// cudaStreamGetDevice, which needs a CUDA 12.8 toolkit to build.
int streamDevice(void* stream) {
  static const auto getCtx = reinterpret_cast<StreamGetCtxFn>(cudaDriverFunction("cuStreamGetCtx", 9020));
  static const auto push = reinterpret_cast<CtxPushPopFn>(cudaDriverFunction("cuCtxPushCurrent", 4000));
  static const auto pop = reinterpret_cast<CtxPopFn>(cudaDriverFunction("cuCtxPopCurrent", 4000));
  if (getCtx == nullptr || push == nullptr || pop == nullptr)
    throwError(collUnhandledCudaError, "the CUDA driver lacks cuStreamGetCtx or cuCtxPushCurrent");
  CUcontext context = nullptr;
  const CUresult rc = getCtx(static_cast<CUstream>(stream), &context);
  // cudaStreamLegacy and cudaStreamPerThread name a default stream of the calling thread's current
  // context, so they need one (CUDA_ERROR_INVALID_CONTEXT otherwise): say so.
  const bool namedDefault = stream == static_cast<void*>(cudaStreamLegacy) ||
                            stream == static_cast<void*>(cudaStreamPerThread);
  if (namedDefault && rc == CUDA_ERROR_INVALID_CONTEXT)
    throwError(collInvalidUsage,
               "stream %p is %s, the default stream of the calling thread's current device, but no CUDA context is "
               "current on this thread: call cudaSetDevice(device) on it first",
               stream, stream == static_cast<void*>(cudaStreamLegacy) ? "cudaStreamLegacy" : "cudaStreamPerThread");
  if (rc != CUDA_SUCCESS || context == nullptr)
    throwError(collInvalidUsage, "stream %p is not a CUDA stream this process knows (cuStreamGetCtx: CUresult %d)",
               stream, static_cast<int>(rc));
  if (push(context) != CUDA_SUCCESS) throwError(collUnhandledCudaError, "cuCtxPushCurrent failed");
  const int device = deviceOfCurrentContext();
  CUcontext popped = nullptr;
  pop(&popped);
  if (device < 0) throwError(collUnhandledCudaError, "cuCtxGetDevice failed for the context of stream %p", stream);
  return device;
}

bool cudaContextIsCurrent() { return currentContext() != nullptr; }

bool isDeviceOnlyMemory(const void* pointer, int* device) {
  using PointerGetAttributesFn = CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
  if (pointer == nullptr || currentContext() == nullptr) return false;
  static const auto get =
      reinterpret_cast<PointerGetAttributesFn>(cudaDriverFunction("cuPointerGetAttributes", 7000));
  if (get == nullptr) return false;
  unsigned memoryType = 0;
  unsigned managed = 0;
  int ordinal = -1;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void* values[] = {&memoryType, &managed, &ordinal};
  // Memory CUDA does not know (plain host memory) is no error for this call: its type stays 0.
  if (get(3, attributes, values, reinterpret_cast<CUdeviceptr>(pointer)) != CUDA_SUCCESS) return false;
  if (memoryType != CU_MEMORYTYPE_DEVICE || managed != 0) return false;
  if (device != nullptr) *device = ordinal;
  return true;
}

CurrentDeviceScope::CurrentDeviceScope(int device) {
  saved_ = currentContext();
  int current = -1;
  if (saved_ != nullptr && cudaGetDevice(&current) == cudaSuccess && current == device) return;
  const cudaError_t rc = cudaSetDevice(device);
  if (rc != cudaSuccess)
    throwError(collUnhandledCudaError, "cudaSetDevice(%d) failed: %s", device, cudaGetErrorString(rc));
  changed_ = true;
}

CurrentDeviceScope::~CurrentDeviceScope() {
  if (!changed_) return;
  static const auto set = reinterpret_cast<CtxSetCurrentFn>(cudaDriverFunction("cuCtxSetCurrent", 4000));
  // Errors are ignored: a destructor, and the caller's context is theirs to check.
  if (set != nullptr) set(static_cast<CUcontext>(saved_));
}

std::string cudaDeviceBusId(int device) {
  char busId[32] = {};
  if (cudaDeviceGetPCIBusId(busId, sizeof busId, device) != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it so that the caller's next check sees its own
    return "";
  }
  return busId;
}

int cudaDeviceOfBusId(const std::string& busId) {
  int device = -1;
  if (cudaDeviceGetByPCIBusId(&device, busId.c_str()) != cudaSuccess) {
    cudaGetLastError();  // not visible here: not an error of the caller's next call
    return -1;
  }
  return device;
}

bool cudaCanAccessPeerByBusId(int device, const std::string& busId) {
  int can = 0;
  const int peer = cudaDeviceOfBusId(busId);
  if (peer < 0) return false;  // not visible here: nothing of it can be mapped
  if (peer == device) return true;
  if (cudaDeviceCanAccessPeer(&can, device, peer) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return can != 0;
}

}  // namespace coll
