// GPU memory for the perf programs (-m device): cudaMalloc'd buffers, a stream per program, and
// staging through host memory to fill and check them. Built only with CUDA.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "perf_memory.h"

namespace collperf {
namespace {

void checkCuda(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(rc));
  exit(1);
}

int localRank() {
  for (const char* var : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
    const char* v = getenv(var);
    if (v != nullptr && *v != '\0') return atoi(v);
  }
  return 0;
}

class DeviceMemory : public PerfMemory {
 public:
  explicit DeviceMemory(int device) : device_(device) {
    checkCuda(cudaSetDevice(device), "cudaSetDevice");
    checkCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~DeviceMemory() override {
    for (char* p : buffers_) cudaFree(p);
    cudaStreamDestroy(stream_);
  }
  char* allocate(size_t bytes) override {
    void* p = nullptr;
    checkCuda(cudaMalloc(&p, bytes), "cudaMalloc");
    checkCuda(cudaMemset(p, 0, bytes), "cudaMemset");
    buffers_.push_back(static_cast<char*>(p));
    return static_cast<char*>(p);
  }
  void fillInput(const DataSpec& spec, char* buf, size_t count) override {
    staging_.resize(count * spec.type->size);
    collperf::fillInput(spec, staging_.data(), count);
    upload(buf, staging_.size());
  }
  void fillPoison(const TypeInfo& type, char* buf, size_t count) override {
    staging_.resize(count * type.size);
    collperf::fillPoison(type, staging_.data(), count);
    upload(buf, staging_.size());
  }
  size_t countWrong(const DataSpec& spec, const char* buf, size_t count,
                    const std::vector<Segment>& segments) override {
    staging_.resize(count * spec.type->size);
    checkCuda(cudaMemcpy(staging_.data(), buf, staging_.size(), cudaMemcpyDeviceToHost), "cudaMemcpy (check)");
    return collperf::countWrong(spec, staging_.data(), segments);
  }
  collStream_t stream() override { return stream_; }
  void synchronize() override { checkCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  int device() const override { return device_; }

 private:
  void upload(char* buf, size_t bytes) {
    checkCuda(cudaMemcpy(buf, staging_.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy (fill)");
  }

  int device_;
  cudaStream_t stream_ = nullptr;
  std::vector<char*> buffers_;
  std::vector<char> staging_;
};

}  // namespace

bool deviceMemoryAvailable(std::string* why) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0) {
    if (why != nullptr)
      *why = rc != cudaSuccess ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc)
                               : std::string("the CUDA driver reports no device");
    return false;
  }
  return true;
}

std::unique_ptr<PerfMemory> makeDeviceMemory(std::string* why) {
  if (!deviceMemoryAvailable(why)) return nullptr;
  int count = 0;
  checkCuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  return std::make_unique<DeviceMemory>(localRank() % count);
}

}  // namespace collperf
