// DeviceCall on CUDA: a process group's own stream of the tensors' device (or the caller's current
// stream) and one event per call. Built only when torch is a CUDA build and the CUDA toolkit's
// headers are found.
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "device_call.h"

namespace torch_collective {
namespace {

// One stream per device, from torch's pool (as NCCL's process group takes its streams), made at
// the device's first call.
class InternalStreams final : public CallStreams {
 public:
  c10::cuda::CUDAStream streamFor(c10::DeviceIndex device) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const c10::cuda::CUDAStream& stream : streams_)
      if (stream.device_index() == device) return stream;
    streams_.push_back(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device));
    return streams_.back();
  }

 private:
  std::mutex mutex_;
  std::vector<c10::cuda::CUDAStream> streams_;
};

class CudaCall final : public DeviceCall {
 public:
  CudaCall(c10::Device device, c10::cuda::CUDAStream stream)
      : device_(device), stream_(stream), caller_(c10::cuda::getCurrentCUDAStream(device.index())) {}
  ~CudaCall() override {
    // An event may be destroyed while the device has yet to pass it: CUDA releases it afterwards.
    if (event_ != nullptr) cudaEventDestroy(event_);
  }

  c10::Device device() const override { return device_; }
  // torch's default stream is the legacy NULL stream, but the library reads a NULL stream as "host
  // buffers" (collective.h): the same stream goes by its other CUDA name, cudaStreamLegacy.
  collStream_t stream() const override {
    cudaStream_t stream = stream_.stream();
    return stream != nullptr ? stream : cudaStreamLegacy;
  }

  // On a stream of the group's own: it waits for what the caller has queued so far, and the
  // tensors' blocks, which the caching allocator hands out again once the caller's stream has
  // passed their last use there, wait for this stream too (recordStream), so that a program that
  // drops a tensor while the call runs cannot see its memory reused under the call.
  void followCaller(const std::vector<at::Tensor>& tensors) const {
    if (stream_ == caller_) return;
    c10::cuda::CUDAGuard onDevice(device_.index());
    cudaEvent_t issued = nullptr;
    C10_CUDA_CHECK(cudaEventCreateWithFlags(&issued, cudaEventDisableTiming));
    C10_CUDA_CHECK(cudaEventRecord(issued, caller_.stream()));
    const cudaError_t waited = cudaStreamWaitEvent(stream_.stream(), issued, 0);
    // Destroying an event a stream still waits for is allowed: CUDA releases it once passed.
    C10_CUDA_CHECK(cudaEventDestroy(issued));
    C10_CUDA_CHECK(waited);
    for (const at::Tensor& tensor : tensors)
      if (tensor.defined() && tensor.is_cuda() && !tensor.is_sparse() && tensor.has_storage())
        c10::cuda::CUDACachingAllocator::recordStream(tensor.storage().data_ptr(), stream_);
  }

  void enterIssue() const override {
    if (stream_ != caller_) c10::cuda::setCurrentCUDAStream(stream_);
  }
  void leaveIssue() const override {
    if (stream_ != caller_) c10::cuda::setCurrentCUDAStream(caller_);
  }

  void runOnStream(const std::function<void()>& body) const override {
    c10::cuda::CUDAStreamGuard guard(stream_);
    // The guard skips cudaSetDevice when the runtime already reports this device, which a fresh
    // thread (the group's worker) does for device 0 with no context current; the library needs
    // the context current to resolve cudaStreamLegacy (torch's default stream). Seen on an H200:
    // cuStreamGetCtx(CU_STREAM_LEGACY) failed with CUDA_ERROR_INVALID_CONTEXT without this.
    C10_CUDA_CHECK(cudaSetDevice(device_.index()));
    body();
  }

  void copyOnStream(void* destination, const void* source, size_t bytes) const override {
    if (bytes == 0) return;
    C10_CUDA_CHECK(cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDeviceToDevice, stream_.stream()));
  }

  void recordCompletion() override {
    c10::cuda::CUDAGuard onDevice(device_.index());
    if (event_ == nullptr) C10_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    C10_CUDA_CHECK(cudaEventRecord(event_, stream_.stream()));
  }

  void makeCurrentStreamWait() const override {
    if (event_ == nullptr) return;
    // torch's default stream is the NULL handle, which CUDA reads as the current device's: make it
    // the call's device, whatever the waiting thread has current.
    c10::cuda::CUDAGuard onDevice(device_.index());
    c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device_.index());
    C10_CUDA_CHECK(cudaStreamWaitEvent(current.stream(), event_, 0));
  }

  bool deviceDone() const override {
    if (event_ == nullptr) return true;
    cudaError_t status = cudaEventQuery(event_);
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();  // not an error: clear it
      return false;
    }
    C10_CUDA_CHECK(status);
    return true;
  }

  void waitOnHost(int timeoutMs) const override {
    // Polled, not cudaEventSynchronize: a call whose peer is gone must not hold this thread forever.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    auto pause = std::chrono::microseconds(20);
    while (!deviceDone()) {
      TORCH_CHECK(std::chrono::steady_clock::now() < deadline, "collective backend: barrier: the group's last call on ",
                  device_, " did not finish on the device within ", timeoutMs, " ms");
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }

 private:
  c10::Device device_;
  c10::cuda::CUDAStream stream_;  // where the call runs
  c10::cuda::CUDAStream caller_;  // the caller's current stream when the call was made
  cudaEvent_t event_ = nullptr;
};

}  // namespace

bool hasCudaSupport() { return true; }

std::shared_ptr<CallStreams> makeInternalStreams() { return std::make_shared<InternalStreams>(); }

std::shared_ptr<DeviceCall> makeDeviceCall(const char* /*op*/, c10::Device device, CallStreams* streams,
                                           const std::vector<at::Tensor>& tensors) {
  const c10::DeviceIndex index = device.index();
  auto* own = static_cast<InternalStreams*>(streams);
  auto call = std::make_shared<CudaCall>(
      device, own != nullptr ? own->streamFor(index) : c10::cuda::getCurrentCUDAStream(index));
  call->followCaller(tensors);
  return call;
}

}  // namespace torch_collective
