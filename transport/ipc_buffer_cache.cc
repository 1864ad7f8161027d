#include "transport/ipc_buffer_cache.h"

namespace coll {
namespace transport {

std::pair<AllocationKey, IpcHandleBytes> IpcExportCache::exportFor(const void* pointer) {
  const AllocationKey key = driver_.allocationOf(pointer);
  auto found = byBase_.find(key.base);
  if (found != byBase_.end() && found->second.first == key) return found->second;
  // A new allocation, or another one at an address an earlier one had: its own handle.
  const IpcHandleBytes handle = driver_.exportHandle(key);
  ++handlesMade_;
  byBase_[key.base] = {key, handle};
  return {key, handle};
}

IpcImportCache::~IpcImportCache() {
  while (!entries_.empty()) closeEntry(entries_.begin());
}

void IpcImportCache::closeEntry(std::list<Entry>::iterator it) {
  driver_.close(it->mapped);
  ++closed_;
  byPeerBase_.erase({it->peer, it->key.base});
  entries_.erase(it);
}

void* IpcImportCache::mappingFor(int peer, const AllocationKey& key, const IpcHandleBytes& handle) {
  auto found = byPeerBase_.find({peer, key.base});
  if (found != byPeerBase_.end()) {
    if (found->second->key == key) {
      entries_.splice(entries_.begin(), entries_, found->second);
      return entries_.front().mapped;
    }
    // The peer freed that allocation and has another at the same base: never read the old one.
    closeEntry(found->second);
  }
  void* mapped = driver_.open(handle);
  ++opened_;
  entries_.push_front(Entry{peer, key, mapped});
  byPeerBase_[{peer, key.base}] = entries_.begin();
  while (capacity_ > 0 && entries_.size() > capacity_) closeEntry(std::prev(entries_.end()));
  return mapped;
}

}  // namespace transport
}  // namespace coll
