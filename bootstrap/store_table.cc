#include "bootstrap/store_table.h"

#include <cstdlib>

#include <algorithm>

#include "bootstrap/store_counter.h"

namespace coll {
namespace bootstrap {

size_t StoreTable::maxBytesFromEnv() {
  const char* text = getenv("COLL_STORE_MAX_BYTES");
  if (text == nullptr || *text == '\0') return kDefaultMaxBytes;
  char* end = nullptr;
  unsigned long long value = strtoull(text, &end, 10);
  return (end != nullptr && *end == '\0' && value > 0) ? static_cast<size_t>(value) : kDefaultMaxBytes;
}

bool StoreTable::set(const std::string& key, Bytes value, std::vector<WaiterId>* ready) {
  auto it = values_.find(key);
  const size_t before = it == values_.end() ? 0 : key.size() + it->second.size();
  const size_t after = key.size() + value.size();
  if (storedBytes_ - before + after > maxBytes_ && after > before) return false;
  storedBytes_ = storedBytes_ - before + after;
  if (it == values_.end()) {
    values_.emplace(key, std::move(value));
  } else {
    it->second = std::move(value);
  }
  wakeWaitersOf(key, ready);
  return true;
}

const Bytes* StoreTable::find(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

StoreTable::AddResult StoreTable::add(const std::string& key, int64_t delta, int64_t* result,
                                      std::vector<WaiterId>* ready) {
  if (!addToCounter(find(key), delta, result)) return AddResult::kNotACounter;
  return set(key, encodeCounter(*result), ready) ? AddResult::kOk : AddResult::kFull;
}

bool StoreTable::hasAll(const std::vector<std::string>& keys) const {
  return std::all_of(keys.begin(), keys.end(), [this](const std::string& k) { return values_.count(k) != 0; });
}

StoreTable::WaiterId StoreTable::addWaiter(const std::vector<std::string>& keys, Deadline deadline) {
  WaiterId id = nextId_++;
  Waiter waiter;
  waiter.deadline = deadline;
  // A key listed twice must be counted once, or the waiter would never reach zero.
  std::vector<std::string> unique = keys;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  for (std::string& key : unique) {
    if (values_.count(key) != 0) continue;
    waitersByKey_[key].push_back(id);
    waiter.missingKeys.push_back(std::move(key));
  }
  waiter.missing = waiter.missingKeys.size();
  byDeadline_.emplace(deadline, id);
  waiters_.emplace(id, std::move(waiter));
  return id;
}

void StoreTable::wakeWaitersOf(const std::string& key, std::vector<WaiterId>* ready) {
  auto it = waitersByKey_.find(key);
  if (it == waitersByKey_.end()) return;
  std::vector<WaiterId> ids = std::move(it->second);
  waitersByKey_.erase(it);
  for (WaiterId id : ids) {
    auto w = waiters_.find(id);
    if (w == waiters_.end()) continue;
    if (--w->second.missing == 0) {
      // Every key of this waiter is now present, so it has no entries left in waitersByKey_.
      byDeadline_.erase({w->second.deadline, id});
      waiters_.erase(w);
      ready->push_back(id);
    }
  }
}

void StoreTable::forget(WaiterId id, const Waiter& waiter) {
  byDeadline_.erase({waiter.deadline, id});
  for (const std::string& key : waiter.missingKeys) {
    auto it = waitersByKey_.find(key);
    if (it == waitersByKey_.end()) continue;  // already set: its index entry went with it
    auto& ids = it->second;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (ids.empty()) waitersByKey_.erase(it);
  }
}

void StoreTable::removeWaiter(WaiterId id) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return;
  forget(id, it->second);
  waiters_.erase(it);
}

std::vector<StoreTable::WaiterId> StoreTable::takeExpired(Deadline now) {
  std::vector<WaiterId> expired;
  while (!byDeadline_.empty() && byDeadline_.begin()->first <= now) {
    expired.push_back(byDeadline_.begin()->second);
    removeWaiter(byDeadline_.begin()->second);
  }
  return expired;
}

Deadline StoreTable::nextDeadline() const { return byDeadline_.empty() ? Deadline::max() : byDeadline_.begin()->first; }

}  // namespace bootstrap
}  // namespace coll
