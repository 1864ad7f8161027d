// A fake CUDA IPC driver (transport/ipc_buffer_cache.h's IpcDriver) for tests without a GPU:
// the test allocates and frees "device" buffers at addresses it chooses, and may reallocate one
// at a freed buffer's address, as the CUDA driver may; handles carry the buffer id, and every
// opened mapping gets a fresh address.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <set>

#include "common/error.h"
#include "transport/ipc_buffer_cache.h"

namespace coll {
namespace transport {
namespace testing_ipc {

// A driver in which the test allocates and frees "device" buffers at addresses it chooses.
class FakeDriver final : public IpcDriver {
 public:
  // A live allocation of `bytes` at `base`, with a fresh buffer id.
  void allocate(uint64_t base, uint64_t bytes) { live_[base] = {base, bytes, ++lastId_}; }
  void release(uint64_t base) { live_.erase(base); }

  AllocationKey allocationOf(const void* pointer) override {
    const uint64_t p = reinterpret_cast<uint64_t>(pointer);
    for (const auto& [base, key] : live_)
      if (p >= base && p < base + key.bytes) return key;
    throwError(collInvalidUsage, "not a live allocation");
  }
  IpcHandleBytes exportHandle(const AllocationKey& allocation) override {
    IpcHandleBytes h{};
    memcpy(h.data(), &allocation.bufferId, sizeof allocation.bufferId);
    ++exported;
    return h;
  }
  void* open(const IpcHandleBytes& handle) override {
    uint64_t id = 0;
    memcpy(&id, handle.data(), sizeof id);
    void* mapped = reinterpret_cast<void*>(0x100000 * ++opens);
    openMappings[mapped] = id;
    return mapped;
  }
  void close(void* mapped) noexcept override {
    closedIds.insert(openMappings[mapped]);
    openMappings.erase(mapped);
  }

  int exported = 0;
  int opens = 0;
  std::map<void*, uint64_t> openMappings;  // mapped -> the buffer id it maps
  std::set<uint64_t> closedIds;

 private:
  std::map<uint64_t, AllocationKey> live_;
  uint64_t lastId_ = 0;
};

}  // namespace testing_ipc
}  // namespace transport
}  // namespace coll
