// Host memory standing for a GPU's (staging_memory.h): the host tests run the proxy and a host
// stand-in for the kernels over it. Regions are 256-byte aligned, as the kernels' are.
#include <cstdlib>
#include <cstring>
#include <deque>

#include "common/error.h"
#include "transport/staged/staging_memory.h"

namespace coll {
namespace transport {
namespace {

constexpr size_t kAlignment = 256;

void* allocateZeroed(size_t bytes) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* memory = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (memory == nullptr) throwError(collSystemError, "staging: could not allocate %zu bytes of host memory", bytes);
  std::memset(memory, 0, rounded);
  return memory;
}

// Stands for a copy engine that runs behind the host's back: each poll completes one copy, and
// only then are its bytes read, so a slot marked full before its copy completed, or a pinned slot
// landed into again while its copy waits, shows the kernels wrong bytes, which the tests see.
class DeferredHostUploader final : public SlotUploader {
 public:
  uint64_t start(void* device, const void* host, size_t bytes) override {
    queued_.push_back(Copy{device, host, bytes});
    return ++started_;
  }
  uint64_t completed() override {
    if (!queued_.empty()) {
      const Copy& c = queued_.front();
      if (c.bytes > 0) std::memcpy(c.device, c.host, c.bytes);
      queued_.pop_front();
      ++completed_;
    }
    return completed_;
  }

 private:
  struct Copy {
    void* device;
    const void* host;
    size_t bytes;
  };
  std::deque<Copy> queued_;
  uint64_t started_ = 0;
  uint64_t completed_ = 0;
};

class HostStagingMemory final : public StagingMemory {
 public:
  MappedBlock allocateMapped(size_t bytes) override {
    char* memory = static_cast<char*>(allocateZeroed(bytes));
    return MappedBlock{memory, memory, bytes};
  }
  void freeMapped(const MappedBlock& block) noexcept override { std::free(block.host); }
  void* allocateDevice(size_t bytes) override { return allocateZeroed(bytes); }
  void freeDevice(void* memory) noexcept override { std::free(memory); }
  void copyToDevice(void* destination, const void* source, size_t bytes) override {
    std::memcpy(destination, source, bytes);
  }
  std::unique_ptr<SlotUploader> makeUploader() override { return std::make_unique<DeferredHostUploader>(); }
  // Every stand-in is its own GPU: threads of a test never share one.
  uint64_t gpuIdentity() override { return reinterpret_cast<uintptr_t>(this); }
  bool mpsClient() override { return false; }
  int residentBlocks() override { return 0; }
  std::string describe() override { return "host memory (a stand-in for a GPU)"; }
};

}  // namespace

std::unique_ptr<StagingMemory> makeHostStagingMemory() { return std::make_unique<HostStagingMemory>(); }

}  // namespace transport
}  // namespace coll
