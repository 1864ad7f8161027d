#include "bootstrap/store_table.h"

#include <cstdlib>

#include <algorithm>

#include "bootstrap/store_counter.h"

namespace coll {
namespace bootstrap {

namespace {

// The environment variable as a positive number of bytes, or `fallback` when unset or not one.
size_t positiveBytesFromEnv(const char* name, size_t fallback) {
  const char* text = getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  unsigned long long value = strtoull(text, &end, 10);
  return (end != nullptr && *end == '\0' && value > 0) ? static_cast<size_t>(value) : fallback;
}

}  // namespace

size_t StoreTable::maxBytesFromEnv() { return positiveBytesFromEnv("COLL_STORE_MAX_BYTES", kDefaultMaxBytes); }

size_t StoreTable::defaultMaxBytesPerOwner(size_t maxBytes) {
  return std::min(maxBytes, std::max(maxBytes / 4, kMaxValueBytes + kMaxKeyBytes));
}

size_t StoreTable::maxBytesPerOwnerFromEnv(size_t maxBytes) {
  return positiveBytesFromEnv("COLL_STORE_MAX_CLIENT_BYTES", defaultMaxBytesPerOwner(maxBytes));
}

size_t StoreTable::bytesOf(OwnerId owner) const {
  auto it = ownerBytes_.find(owner);
  return it == ownerBytes_.end() ? 0 : it->second;
}

StoreTable::WriteResult StoreTable::admits(OwnerId owner, size_t releasedTotal, size_t releasedOwn,
                                           size_t charged) const {
  // A write that does not grow a count is never refused by it, so a client over a lowered limit
  // can still shrink what it holds.
  if (charged > releasedTotal && storedBytes_ - releasedTotal + charged > maxBytes_) return WriteResult::kFull;
  if (owner != kNoOwner && charged > releasedOwn && bytesOf(owner) - std::min(bytesOf(owner), releasedOwn) + charged > maxBytesPerOwner_) {
    return WriteResult::kOverShare;
  }
  return WriteResult::kOk;
}

void StoreTable::charge(OwnerId owner, size_t bytes) {
  storedBytes_ += bytes;
  if (owner != kNoOwner) ownerBytes_[owner] += bytes;
}

void StoreTable::discharge(OwnerId owner, size_t bytes) {
  storedBytes_ -= bytes;
  auto it = ownerBytes_.find(owner);  // absent for kNoOwner and for owners already forgotten
  if (it != ownerBytes_.end()) it->second -= std::min(it->second, bytes);
}

StoreTable::WriteResult StoreTable::set(const std::string& key, Bytes value, std::vector<WaiterId>* ready,
                                        OwnerId owner) {
  auto it = values_.find(key);
  const size_t before = it == values_.end() ? 0 : key.size() + it->second.value.size();
  const size_t after = key.size() + value.size();
  // Replacing another owner's value frees total bytes but still grows the writer's own account.
  const size_t releasedOwn = (it != values_.end() && it->second.owner == owner) ? before : 0;
  const WriteResult admitted = admits(owner, before, releasedOwn, after);
  if (admitted != WriteResult::kOk) return admitted;
  if (it == values_.end()) {
    it = values_.emplace(key, Entry{}).first;
  } else {
    discharge(it->second.owner, before);
  }
  charge(owner, after);
  it->second.value = std::move(value);
  it->second.owner = owner;
  wakeWaitersOf(key, ready);
  return WriteResult::kOk;
}

const Bytes* StoreTable::find(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second.value;
}

StoreTable::WriteResult StoreTable::add(const std::string& key, int64_t delta, int64_t* result,
                                        std::vector<WaiterId>* ready, OwnerId owner) {
  if (!addToCounter(find(key), delta, result)) return WriteResult::kNotACounter;
  return set(key, encodeCounter(*result), ready, owner);
}

StoreTable::WriteResult StoreTable::reserve(OwnerId owner, size_t bytes) {
  const WriteResult admitted = admits(owner, 0, 0, bytes);
  if (admitted == WriteResult::kOk) charge(owner, bytes);
  return admitted;
}

void StoreTable::release(OwnerId owner, size_t bytes) { discharge(owner, bytes); }

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
