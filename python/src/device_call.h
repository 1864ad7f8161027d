// The CUDA side of a call on CUDA tensors (docs/pytorch.md, "CUDA tensors"). A process group's
// call whose tensors are all on one CUDA device runs, as with NCCL, on a stream of the group's own
// for that device (CallStreams), made to wait for the caller's current stream when the call is
// issued: the program's later work on its stream does not wait for the call (DDP's backward goes
// on while a bucket is reduced). An event recorded behind the call is what its Work waits for
// (wait() and synchronize() make the then current stream wait for it; no host block).
// TORCH_COLLECTIVE_CUDA_STREAM=current runs calls on the caller's current stream instead, as do
// the ZeRO bindings' calls, whose callers order them by their own streams.
// This header needs no CUDA header: device_call_cuda.cc implements it where the extension is built
// with CUDA, device_call_none.cc (which refuses CUDA tensors) elsewhere.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "collective.h"

namespace torch_collective {

class DeviceCall {
 public:
  virtual ~DeviceCall() = default;

  virtual c10::Device device() const = 0;
  // The stream the call runs on, as the library takes it (a cudaStream_t).
  virtual collStream_t stream() const = 0;
  // While the call is being issued (IssueOnCallStream): makes the call's stream the thread's
  // current one, so that staging copies and buffers made before the call is queued are ordered,
  // and allocated, where the call runs; then restores the caller's.
  virtual void enterIssue() const = 0;
  virtual void leaveIssue() const = 0;
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

// The streams a process group's calls run on: one per device, taken from torch's pool at the
// device's first call and kept for the group's life, so that the group's calls stay in order.
class CallStreams {
 public:
  virtual ~CallStreams() = default;
};
// A process group's streams, per TORCH_COLLECTIVE_CUDA_STREAM (`internal`, the default, or
// `current`: then nullptr, and calls run on the caller's current stream). Throws, naming the
// variable, for another value.
std::shared_ptr<CallStreams> makeCallStreams();

// Where the tensors of call `op` are: nullptr when all are on the CPU, a DeviceCall when all are
// on one CUDA device: on `streams`' stream of that device, which waits from now on for what the
// caller's current stream has queued, and with the tensors' memory kept from reuse until that
// stream has passed the call (the caching allocator's recordStream); on the caller's current
// stream when `streams` is null. Throws, naming `op` and the devices, when they are on several
// devices, or on CUDA in a build without CUDA support.
std::shared_ptr<DeviceCall> deviceCallFor(const char* op, const std::vector<at::Tensor>& tensors, CallStreams* streams);
// The same for a call on one tensor.
std::shared_ptr<DeviceCall> deviceCallFor(const char* op, const at::Tensor& tensor, CallStreams* streams);

// The scope of issuing a call: from the DeviceCall's making to its hand-over to the work queue,
// the call's stream is the current one (DeviceCall::enterIssue). Nothing for host calls.
class IssueOnCallStream {
 public:
  explicit IssueOnCallStream(std::shared_ptr<DeviceCall> call) : call_(std::move(call)) {
    if (call_) call_->enterIssue();
  }
  ~IssueOnCallStream() {
    if (call_) call_->leaveIssue();
  }
  IssueOnCallStream(const IssueOnCallStream&) = delete;
  IssueOnCallStream& operator=(const IssueOnCallStream&) = delete;

 private:
  std::shared_ptr<DeviceCall> call_;
};

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

// Implemented by device_call_cuda.cc or device_call_none.cc: the call of `tensors` on `device`, a
// CUDA device (deviceCallFor); the group's own streams (nullptr: the caller's current stream).
std::shared_ptr<DeviceCall> makeDeviceCall(const char* op, c10::Device device, CallStreams* streams,
                                           const std::vector<at::Tensor>& tensors);
std::shared_ptr<CallStreams> makeInternalStreams();

}  // namespace torch_collective
