// Caches of CUDA IPC mappings of the callers' buffers, for rank processes that share a GPU (MPS)
// and reduce straight from each other's buffers, as thread ranks do with the direct all-reduce
// (kernels/cuda/direct_kernel.cuh). Opening a handle costs a driver call and a mapping, so both
// ends keep what they made; the danger is a buffer freed and another allocated at the same
// address: a mapping of the old allocation would then be read (or written) in its place.
//
// The reuse rule: an allocation is known by its key, {base address, size, buffer id}, where the
// buffer id is the driver's (CU_POINTER_ATTRIBUTE_BUFFER_ID), never reused within a process. The
// exporting rank looks its buffer's key up again on every call (three pointer attributes, no
// allocation) and exports a new handle whenever the key at that base differs; the importing rank
// opens a new mapping whenever the key it is sent differs from the one its mapping was made for,
// closing the stale one first. Equal keys, and only equal keys, reuse a mapping.
//
// No CUDA here: the driver calls are an interface (IpcDriver), the real one in
// transport/p2p/p2p_ipc_driver.cc, a fake in tests/transport/test_ipc_buffer_cache.cc.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <utility>

namespace coll {
namespace transport {

struct AllocationKey {
  uint64_t base = 0;
  uint64_t bytes = 0;
  uint64_t bufferId = 0;  // the driver's, unique within the exporting process
  bool operator==(const AllocationKey& o) const { return base == o.base && bytes == o.bytes && bufferId == o.bufferId; }
  bool operator!=(const AllocationKey& o) const { return !(*this == o); }
};

// A cudaIpcMemHandle_t's bytes.
using IpcHandleBytes = std::array<uint8_t, 64>;

class IpcDriver {
 public:
  virtual ~IpcDriver() = default;
  // The allocation `pointer` lies in, as it is now. Throws CollError for memory that is not the
  // device's (a host pointer, a freed one).
  virtual AllocationKey allocationOf(const void* pointer) = 0;
  virtual IpcHandleBytes exportHandle(const AllocationKey& allocation) = 0;
  // Maps a peer's allocation into this process; returns where its base is mapped.
  virtual void* open(const IpcHandleBytes& handle) = 0;
  virtual void close(void* mapped) noexcept = 0;
};

// The exporting side: the handle of each of this rank's allocations, made once per allocation.
class IpcExportCache {
 public:
  explicit IpcExportCache(IpcDriver& driver) : driver_(driver) {}
  // The key and handle of the allocation `pointer` lies in now (a new handle if the allocation at
  // that base is not the one last exported).
  std::pair<AllocationKey, IpcHandleBytes> exportFor(const void* pointer);
  uint64_t handlesMade() const { return handlesMade_; }

 private:
  IpcDriver& driver_;
  std::map<uint64_t, std::pair<AllocationKey, IpcHandleBytes>> byBase_;
  uint64_t handlesMade_ = 0;
};

// The importing side: mappings of peers' allocations, at most `capacity` (the least recently used
// closed first), each reused only for the exact key it was opened for.
class IpcImportCache {
 public:
  IpcImportCache(IpcDriver& driver, size_t capacity) : driver_(driver), capacity_(capacity) {}
  ~IpcImportCache();
  IpcImportCache(const IpcImportCache&) = delete;
  IpcImportCache& operator=(const IpcImportCache&) = delete;
  // Where `peer`'s allocation `key` is mapped here: the cached mapping when its key is equal,
  // else a new one from `handle` (after closing any stale mapping of that peer at that base).
  void* mappingFor(int peer, const AllocationKey& key, const IpcHandleBytes& handle);
  // Whether mappingFor(peer, key, ...) would reuse a mapping (open nothing, close nothing).
  bool holds(int peer, const AllocationKey& key) const {
    auto found = byPeerBase_.find({peer, key.base});
    return found != byPeerBase_.end() && found->second->key == key;
  }
  size_t size() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }
  uint64_t opened() const { return opened_; }
  uint64_t closed() const { return closed_; }

 private:
  struct Entry {
    int peer;
    AllocationKey key;
    void* mapped;
  };
  void closeEntry(std::list<Entry>::iterator it);

  IpcDriver& driver_;
  size_t capacity_;
  std::list<Entry> entries_;  // most recently used first
  std::map<std::pair<int, uint64_t>, std::list<Entry>::iterator> byPeerBase_;
  uint64_t opened_ = 0;
  uint64_t closed_ = 0;
};

}  // namespace transport
}  // namespace coll
