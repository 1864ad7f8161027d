// The CUDA side of a call on CUDA tensors (docs/pytorch.md, "CUDA tensors"). A call whose tensors
// are all on one CUDA device runs on the caller's current CUDA stream of that device, as with
// NCCL: the library enqueues it there, and an event recorded behind it is what the call's Work
// waits for (wait() and synchronize() make the then current stream wait for it; no host block).
// This header needs no CUDA header: device_call_cuda.cc implements it where the extension is built
// with CUDA, device_call_none.cc (which refuses CUDA tensors) elsewhere.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <vector>

#include "collective.h"

namespace torch_collective {

class DeviceCall {
 public:
  virtual ~DeviceCall() = default;

  virtual c10::Device device() const = 0;
  // The stream the call runs on, as the library takes it (a cudaStream_t).
  virtual collStream_t stream() const = 0;
  // Runs `body` on this thread with the call's device and stream current, so that torch
  // operations in it (copies into the caller's tensors) are ordered on the call's stream.
  virtual void runOnStream(const std::function<void()>& body) const = 0;
  // Copies bytes within the device, ordered on the call's stream.
  virtual void copyOnStream(void* destination, const void* source, size_t bytes) const = 0;
  // Records the call's event on its stream: after the library calls and the copies behind them.
  virtual void recordCompletion() = 0;
  // Makes the calling thread's current stream of the device wait for the event.
  virtual void makeCurrentStreamWait() const = 0;
  // Whether the device has passed the event.
  virtual bool deviceDone() const = 0;
  // Blocks the calling thread until the device has passed the event; throws after `timeoutMs`.
  virtual void waitOnHost(int timeoutMs) const = 0;
};

// Where the tensors of call `op` are: nullptr when all are on the CPU, a DeviceCall on the
// current stream of their device when all are on one CUDA device. Throws, naming `op` and the
// devices, when they are on several devices, or on CUDA in a build without CUDA support.
std::shared_ptr<DeviceCall> deviceCallFor(const char* op, const std::vector<at::Tensor>& tensors);
// The same for a call on one tensor.
std::shared_ptr<DeviceCall> deviceCallFor(const char* op, const at::Tensor& tensor);

// The library's stream argument for a call: NULL for host tensors.
inline collStream_t streamOf(const std::shared_ptr<DeviceCall>& device) {
  return device ? device->stream() : nullptr;
}

// Runs `body` where the call belongs: with its device and stream current (runOnStream) for CUDA
// tensors, as it is for host tensors.
inline void runWhereCallRuns(const std::shared_ptr<DeviceCall>& device, const std::function<void()>& body) {
  if (device) {
    device->runOnStream(body);
  } else {
    body();
  }
}

// Whether this build takes CUDA tensors (torch_collective._C.cuda_support).
bool hasCudaSupport();

// Implemented by device_call_cuda.cc or device_call_none.cc: the call on `device`, a CUDA device.
std::shared_ptr<DeviceCall> makeDeviceCall(const char* op, c10::Device device);

}  // namespace torch_collective
