#include "device_call.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>

namespace torch_collective {

std::shared_ptr<CallStreams> makeCallStreams() {
  const char* value = std::getenv("TORCH_COLLECTIVE_CUDA_STREAM");
  if (value == nullptr || *value == '\0' || std::strcmp(value, "internal") == 0) return makeInternalStreams();
  TORCH_CHECK(std::strcmp(value, "current") == 0, "collective backend: TORCH_COLLECTIVE_CUDA_STREAM=", value,
              ": expected internal (a stream of the group's own, as NCCL's) or current (the caller's current stream)");
  return nullptr;
}

std::shared_ptr<DeviceCall> deviceCallFor(const char* op, const std::vector<at::Tensor>& tensors,
                                          CallStreams* streams) {
  const at::Tensor* first = nullptr;
  for (const at::Tensor& tensor : tensors) {
    if (!tensor.defined()) continue;
    if (first == nullptr) {
      first = &tensor;
      continue;
    }
    TORCH_CHECK(tensor.device() == first->device(), "collective backend: ", op, ": tensors on ", first->device(),
                " and on ", tensor.device(),
                " in one call; expected every tensor on the CPU or every tensor on one CUDA device");
  }
  if (first == nullptr || first->device().is_cpu()) return nullptr;
  TORCH_CHECK(first->device().is_cuda(), "collective backend: ", op, " takes CPU or CUDA tensors, got one on ",
              first->device());
  return makeDeviceCall(op, first->device(), streams, tensors);
}

std::shared_ptr<DeviceCall> deviceCallFor(const char* op, const at::Tensor& tensor, CallStreams* streams) {
  // A host tensor, the small calls' usual case, returns before the list a device call needs is made.
  if (!tensor.defined() || tensor.device().is_cpu()) return nullptr;
  return deviceCallFor(op, std::vector<at::Tensor>{tensor}, streams);
}

}  // namespace torch_collective
