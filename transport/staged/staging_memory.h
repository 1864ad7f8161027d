// Where a staged domain's memory comes from. On a GPU (staging_memory_cuda.cc): the slots the
// kernels and the proxy share are pinned host memory mapped into the device's address space
// (cudaHostAlloc, mapped and portable), and the kernels' own words (lane barrier, scratch, the
// peer table) are device memory. In the host tests (staging_memory_host.cc) plain host memory
// stands for both, so the proxy and a host stand-in for the kernels run the same layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "transport/staged/slot_uploader.h"

namespace coll {
namespace transport {

// One allocation seen from both sides: `host` for the proxy, `device` for the kernels (equal
// under CUDA's unified addressing, kept apart so that nothing relies on it).
struct MappedBlock {
  char* host = nullptr;
  char* device = nullptr;
  size_t bytes = 0;
};

class StagingMemory {
 public:
  virtual ~StagingMemory() = default;
  // Zeroed memory the host writes and the device maps. Throws CollError when refused.
  virtual MappedBlock allocateMapped(size_t bytes) = 0;
  virtual void freeMapped(const MappedBlock& block) noexcept = 0;
  // Zeroed device memory.
  virtual void* allocateDevice(size_t bytes) = 0;
  virtual void freeDevice(void* memory) noexcept = 0;
  virtual void copyToDevice(void* destination, const void* source, size_t bytes) = 0;
  // A copy engine's queue for the landed slots of the domain's staged peers (slot_uploader.h), on
  // this GPU.
  virtual std::unique_ptr<SlotUploader> makeUploader() = 0;
  // Which GPU (a digest of its PCI address) and whether this process reaches it through MPS: whether
  // ranks of several processes share a GPU decides whether their kernels may wait on each other.
  virtual uint64_t gpuIdentity() = 0;
  virtual bool mpsClient() = 0;
  // How many blocks of the schedule kernel the GPU holds at once (0: unknown).
  virtual int residentBlocks() = 0;
  // For the INFO line: "pinned host memory mapped by GPU 0", "host memory (a stand-in for a GPU)".
  virtual std::string describe() = 0;
};

// The device's memory; throws collInvalidUsage in a build without CUDA.
std::unique_ptr<StagingMemory> makeDeviceStagingMemory(int device);
// Host memory standing for the device's: for the host tests of the staging path.
std::unique_ptr<StagingMemory> makeHostStagingMemory();

}  // namespace transport
}  // namespace coll
