#include "bootstrap/memory_store.h"

#include <algorithm>

#include "bootstrap/store_counter.h"
#include "common/error.h"
#include "common/socket.h"

namespace coll {
namespace bootstrap {

void MemoryStore::set(const std::string& key, const Bytes& value) {
  if (key.size() > kMaxKeyBytes || value.size() > kMaxValueBytes) {
    throwError(collInvalidArgument, "MemoryStore::set: key of %zu bytes or value of %zu bytes above the limit",
               key.size(), value.size());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    values_[key] = value;
  }
  changed_.notify_all();
}

Bytes MemoryStore::get(const std::string& key, Deadline deadline) {
  const auto start = Clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  auto present = [&] { return values_.count(key) != 0; };
  if (!changed_.wait_until(lock, deadline, present)) {
    throwError(collTimeout, "MemoryStore::get: timed out waiting for key '%s' after %lld ms",
               key.substr(0, 200).c_str(), elapsedMs(start, Clock::now()));
  }
  return values_.at(key);
}

int64_t MemoryStore::add(const std::string& key, int64_t delta) {
  int64_t result = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = values_.find(key);
    if (!addToCounter(it == values_.end() ? nullptr : &it->second, delta, &result)) {
      throwError(collInvalidUsage,
                 "MemoryStore::add: the value of key '%s' is not a decimal counter, or adding %lld overflows int64",
                 key.substr(0, 200).c_str(), static_cast<long long>(delta));
    }
    values_[key] = encodeCounter(result);
  }
  changed_.notify_all();
  return result;
}

bool MemoryStore::hasAllLocked(const std::vector<std::string>& keys) const {
  return std::all_of(keys.begin(), keys.end(), [this](const std::string& k) { return values_.count(k) != 0; });
}

void MemoryStore::wait(const std::vector<std::string>& keys, Deadline deadline) {
  const auto start = Clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  if (!changed_.wait_until(lock, deadline, [&] { return hasAllLocked(keys); })) {
    std::string missing;
    for (const auto& k : keys) {
      if (values_.count(k) == 0) missing += (missing.empty() ? "'" : ", '") + k.substr(0, 200) + "'";
      if (missing.size() > 600) break;
    }
    throwError(collTimeout, "MemoryStore::wait: timed out waiting for keys %s after %lld ms", missing.c_str(),
               elapsedMs(start, Clock::now()));
  }
}

bool MemoryStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(mutex_);
  return hasAllLocked(keys);
}

}  // namespace bootstrap
}  // namespace coll
