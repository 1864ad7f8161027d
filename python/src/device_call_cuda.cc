// DeviceCall on CUDA: the caller's current stream of the tensors' device and one event per call.
// Built only when torch is a CUDA build and the CUDA toolkit's headers are found.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "device_call.h"

namespace torch_collective {
namespace {

class CudaCall final : public DeviceCall {
 public:
  CudaCall(c10::Device device) : device_(device), stream_(c10::cuda::getCurrentCUDAStream(device.index())) {}
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
  c10::cuda::CUDAStream stream_;
  cudaEvent_t event_ = nullptr;
};

}  // namespace

bool hasCudaSupport() { return true; }

std::shared_ptr<DeviceCall> makeDeviceCall(const char* /*op*/, c10::Device device) {
  return std::make_shared<CudaCall>(device);
}

}  // namespace torch_collective
