// A Store in this process's memory, for ranks that are threads of one process (the multi-rank
// tests, and single-process jobs): no sockets, no secret, same semantics as TcpStoreClient.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <unordered_map>

#include "bootstrap/store.h"

namespace coll {
namespace bootstrap {

class MemoryStore : public Store {
 public:
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key, Deadline deadline) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::vector<std::string>& keys, Deadline deadline) override;
  bool check(const std::vector<std::string>& keys) override;

 private:
  bool hasAllLocked(const std::vector<std::string>& keys) const;

  std::mutex mutex_;
  // One condition for every key: sets are rare during init and waiters re-check their own keys.
  std::condition_variable changed_;
  std::unordered_map<std::string, Bytes> values_;
};

}  // namespace bootstrap
}  // namespace coll
