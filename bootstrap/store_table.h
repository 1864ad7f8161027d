// The rendezvous server's state with no sockets in it: the key-value table and the requests
// (blocking get and wait) that are waiting for keys. Kept apart from the network loop so that
// the bookkeeping is simple to read and the loop only moves bytes.
//
// Waiters are indexed by the keys they still miss, so a set touches only the waiters of its key
// (a 1,000-rank init has ~1,000 waiters and ~1,000 sets; scanning every waiter on every set would
// be quadratic), and by deadline, so the loop finds the next timeout without a scan.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bootstrap/store.h"

namespace coll {
namespace bootstrap {

class StoreTable {
 public:
  using WaiterId = uint64_t;
  // What the table may hold, keys and values together, unless COLL_STORE_MAX_BYTES says
  // otherwise: far more than a rendezvous needs (address cards of a few hundred bytes per rank),
  // far less than a client flooding the store would take.
  static constexpr size_t kDefaultMaxBytes = size_t{256} << 20;
  // COLL_STORE_MAX_BYTES when set (a positive number of bytes), else kDefaultMaxBytes.
  static size_t maxBytesFromEnv();

  explicit StoreTable(size_t maxBytes = kDefaultMaxBytes) : maxBytes_(maxBytes) {}

  // Stores the value; appends to *ready the waiters that now have every key they wanted (they
  // are removed from the table). False, and nothing changed, when the table would then hold
  // more than its limit.
  bool set(const std::string& key, Bytes value, std::vector<WaiterId>* ready);
  // The value, or nullptr when absent. Valid until the next set or add.
  const Bytes* find(const std::string& key) const;
  enum class AddResult { kOk, kNotACounter, kFull };
  // Adds delta to the counter at key; kNotACounter (and nothing changed) when the stored value
  // is not a counter or the sum overflows, kFull when a new counter would pass the limit.
  // Appends woken waiters to *ready like set().
  AddResult add(const std::string& key, int64_t delta, int64_t* result, std::vector<WaiterId>* ready);
  size_t storedBytes() const { return storedBytes_; }
  size_t maxBytes() const { return maxBytes_; }
  bool hasAll(const std::vector<std::string>& keys) const;

  // Registers a waiter for the keys that are missing now (at least one must be missing).
  WaiterId addWaiter(const std::vector<std::string>& keys, Deadline deadline);
  // Forgets a waiter (its client went away); unknown ids are ignored.
  void removeWaiter(WaiterId id);
  // Removes and returns every waiter whose deadline is at or before now.
  std::vector<WaiterId> takeExpired(Deadline now);
  // The earliest waiter deadline, or Deadline::max() when nobody waits.
  Deadline nextDeadline() const;
  size_t waiterCount() const { return waiters_.size(); }
  size_t keyCount() const { return values_.size(); }

 private:
  struct Waiter {
    std::vector<std::string> missingKeys;  // as registered; some may have been set since
    size_t missing = 0;
    Deadline deadline;
  };
  void wakeWaitersOf(const std::string& key, std::vector<WaiterId>* ready);
  void forget(WaiterId id, const Waiter& waiter);

  const size_t maxBytes_;
  size_t storedBytes_ = 0;  // every key's and value's bytes
  std::unordered_map<std::string, Bytes> values_;
  std::unordered_map<WaiterId, Waiter> waiters_;
  std::unordered_map<std::string, std::vector<WaiterId>> waitersByKey_;
  std::set<std::pair<Deadline, WaiterId>> byDeadline_;
  WaiterId nextId_ = 1;
};

}  // namespace bootstrap
}  // namespace coll
