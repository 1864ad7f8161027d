// Host memory for the perf programs, and the answers "no GPU" of a build without CUDA.
#include "perf_memory.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace collperf {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { free(p); }
};

class HostMemory : public PerfMemory {
 public:
  char* allocate(size_t bytes) override {
    size_t rounded = (bytes + 4095) / 4096 * 4096;
    void* p = aligned_alloc(4096, rounded);
    if (p == nullptr) {
      fprintf(stderr, "cannot allocate %zu bytes of host memory\n", rounded);
      exit(1);
    }
    memset(p, 0, rounded);  // first touch now, not inside the timed loop
    buffers_.emplace_back(static_cast<char*>(p));
    return buffers_.back().get();
  }
  void fillInput(const DataSpec& spec, char* buf, size_t count) override { collperf::fillInput(spec, buf, count); }
  void fillPoison(const TypeInfo& type, char* buf, size_t count) override { collperf::fillPoison(type, buf, count); }
  size_t countWrong(const DataSpec& spec, const char* buf, size_t count,
                    const std::vector<Segment>& segments) override {
    (void)count;
    return collperf::countWrong(spec, buf, segments);
  }
  collStream_t stream() override { return nullptr; }
  void synchronize() override {}
  int device() const override { return -1; }

 private:
  std::vector<std::unique_ptr<char, FreeDeleter>> buffers_;
};

}  // namespace

std::unique_ptr<PerfMemory> makeHostMemory() { return std::make_unique<HostMemory>(); }

#if !defined(COLL_PERF_WITH_CUDA)
bool deviceMemoryAvailable(std::string* why) {
  if (why != nullptr) *why = "the perf programs were built without CUDA (COLL_WITH_CUDA=OFF or no nvcc)";
  return false;
}

std::unique_ptr<PerfMemory> makeDeviceMemory(std::string* why) {
  deviceMemoryAvailable(why);
  return nullptr;
}
#endif

}  // namespace collperf
