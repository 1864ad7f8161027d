// The extension without CUDA support (a CPU-only torch, or no CUDA toolkit at build time).
#include <c10/util/Exception.h>

#include "device_call.h"

namespace torch_collective {

bool hasCudaSupport() { return false; }

std::shared_ptr<CallStreams> makeInternalStreams() { return nullptr; }

std::shared_ptr<DeviceCall> makeDeviceCall(const char* op, c10::Device device, CallStreams* /*streams*/,
                                           const std::vector<at::Tensor>& /*tensors*/) {
  TORCH_CHECK(false, "collective backend: ", op, " got a tensor on ", device,
              ", but this build of torch_collective has no CUDA support (it was built against a CPU-only torch, "
              "or without the CUDA toolkit); move the tensors to the CPU or rebuild (docs/pytorch.md)");
}

}  // namespace torch_collective
