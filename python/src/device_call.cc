#include "device_call.h"

#include <c10/util/Exception.h>

namespace torch_collective {

std::shared_ptr<DeviceCall> deviceCallFor(const char* op, const std::vector<at::Tensor>& tensors) {
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
  return first == nullptr ? nullptr : deviceCallFor(op, *first);
}

std::shared_ptr<DeviceCall> deviceCallFor(const char* op, const at::Tensor& tensor) {
  if (!tensor.defined() || tensor.device().is_cpu()) return nullptr;
  TORCH_CHECK(tensor.device().is_cuda(), "collective backend: ", op, " takes CPU or CUDA tensors, got one on ",
              tensor.device());
  return makeDeviceCall(op, tensor.device());
}

}  // namespace torch_collective
