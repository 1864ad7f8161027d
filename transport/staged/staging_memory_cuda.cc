// A GPU's staging memory (staging_memory.h): pinned host memory mapped into the device's
// addresses for the slots (the kernels write what they send there over PCIe, and reduce straight
// from what the proxy landed there), device memory for the kernels' own words. Built with CUDA.
#include <cuda_runtime.h>

#include <cstring>
#include <deque>
#include <vector>

#include "common/cuda_check.h"
#include "common/error.h"
#include "common/hash.h"
#include "kernels/cuda/launch.h"
#include "transport/setup_stream.h"
#include "transport/staged/staging_memory.h"

namespace coll {
namespace transport {
namespace {

// The proxy's thread before its CUDA calls: the domain's device current, and the thread's stream
// capture mode relaxed, so that its event queries do not invalidate a capture that another thread
// of the process has begun in the global mode (torch.cuda.graph's default).
void prepareProxyThread(int device) {
  thread_local bool relaxed = false;
  thread_local int current = -1;
  if (!relaxed) {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    COLL_CUDACHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    relaxed = true;
  }
  if (current != device) {
    COLL_CUDACHECK(cudaSetDevice(device));
    current = device;
  }
}

// The landed slots copied into device memory on a stream of their own. An event the proxy polls
// (cudaEventQuery: no wait) follows the copies started since the previous poll, not each copy: a
// frame's lanes, started together, share one. Events are reused once complete.
class CudaSlotUploader final : public SlotUploader {
 public:
  explicit CudaSlotUploader(int device) : device_(device) {
    COLL_CUDACHECK(cudaSetDevice(device_));
    COLL_CUDACHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~CudaSlotUploader() override {
    // Errors are ignored: this runs on teardown and after failures, when the device may be gone.
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    for (const InFlight& f : inFlight_) cudaEventDestroy(f.event);
    for (cudaEvent_t e : spare_) cudaEventDestroy(e);
    cudaStreamDestroy(stream_);
  }
  CudaSlotUploader(const CudaSlotUploader&) = delete;
  CudaSlotUploader& operator=(const CudaSlotUploader&) = delete;

  uint64_t start(void* device, const void* host, size_t bytes) override {
    prepareProxyThread(device_);
    if (bytes > 0) COLL_CUDACHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_));
    return ++started_;
  }
  uint64_t completed() override {
    if (started_ == completed_) return completed_;
    prepareProxyThread(device_);
    if (marked_ < started_) mark();
    while (!inFlight_.empty()) {
      const cudaError_t rc = cudaEventQuery(inFlight_.front().event);
      if (rc == cudaErrorNotReady) break;
      COLL_CUDACHECK(rc);
      completed_ = inFlight_.front().through;
      spare_.push_back(inFlight_.front().event);
      inFlight_.pop_front();
    }
    return completed_;
  }

 private:
  struct InFlight {
    uint64_t through;  // the last copy it follows
    cudaEvent_t event;
  };
  // An event behind every copy started so far.
  void mark() {
    cudaEvent_t event = nullptr;
    if (spare_.empty()) {
      COLL_CUDACHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    } else {
      event = spare_.back();
      spare_.pop_back();
    }
    const cudaError_t recorded = cudaEventRecord(event, stream_);
    if (recorded != cudaSuccess) {
      spare_.push_back(event);
      COLL_CUDACHECK(recorded);
    }
    inFlight_.push_back(InFlight{started_, event});
    marked_ = started_;
  }

  int device_;
  cudaStream_t stream_ = nullptr;
  std::deque<InFlight> inFlight_;
  std::vector<cudaEvent_t> spare_;
  uint64_t started_ = 0;
  uint64_t marked_ = 0;  // the copies an event follows
  uint64_t completed_ = 0;
};

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
  std::unique_ptr<SlotUploader> makeUploader() override { return std::make_unique<CudaSlotUploader>(device_); }
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
