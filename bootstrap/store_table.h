// The rendezvous server's state with no sockets in it: the key-value table and the requests
// (blocking get and wait) that are waiting for keys. Kept apart from the network loop so that
// the bookkeeping is simple to read and the loop only moves bytes.
//
// Every value is charged to the client that wrote it last (its owner), so that one client cannot
// fill the whole table: each owner has a share of the limit as well as the table a total.
//
// Waiters are indexed by the keys they still miss, so a set touches only the waiters of its key
// (a 1,000-rank init has ~1,000 waiters and ~1,000 sets; scanning every waiter on every set would
// be quadratic), and by deadline, so the loop finds the next timeout without a scan.
#pragma once

#include <cstdint>
#include <limits>
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
  using OwnerId = uint64_t;  // the store service's connection id
  static constexpr OwnerId kNoOwner = 0;  // counted in the total, under no share
  // What the table may hold, keys and values together, unless COLL_STORE_MAX_BYTES says
  // otherwise: far more than a rendezvous needs (address cards of a few hundred bytes per rank),
  // far less than a client flooding the store would take.
  static constexpr size_t kDefaultMaxBytes = size_t{256} << 20;
  // COLL_STORE_MAX_BYTES when set (a positive number of bytes), else kDefaultMaxBytes.
  static size_t maxBytesFromEnv();
  // One owner's share unless COLL_STORE_MAX_CLIENT_BYTES says otherwise: a quarter of the total,
  // so that a client flooding the store leaves the other ranks room to finish their rendezvous,
  // but never less than one largest value with its key (so any single write can succeed), and
  // never more than the total.
  static size_t defaultMaxBytesPerOwner(size_t maxBytes);
  // COLL_STORE_MAX_CLIENT_BYTES when set (a positive number of bytes), else the default above.
  static size_t maxBytesPerOwnerFromEnv(size_t maxBytes);

  explicit StoreTable(size_t maxBytes = kDefaultMaxBytes,
                      size_t maxBytesPerOwner = std::numeric_limits<size_t>::max())
      : maxBytes_(maxBytes), maxBytesPerOwner_(maxBytesPerOwner) {}

  // kFull: the table would hold more than its total; kOverShare: the writer would hold more
  // than its share; kNotACounter: add() found a value that is not a counter, or the sum overflows.
  // Whatever is not kOk changed nothing.
  enum class WriteResult { kOk, kFull, kOverShare, kNotACounter };
  // Stores the value, charged to `owner` (the bytes of a value it replaces are taken off that
  // value's owner); appends to *ready the waiters that now have every key they wanted (they are
  // removed from the table).
  WriteResult set(const std::string& key, Bytes value, std::vector<WaiterId>* ready, OwnerId owner = kNoOwner);
  // The value, or nullptr when absent. Valid until the next set or add.
  const Bytes* find(const std::string& key) const;
  // Adds delta to the counter at key, like set() otherwise.
  WriteResult add(const std::string& key, int64_t delta, int64_t* result, std::vector<WaiterId>* ready,
                  OwnerId owner = kNoOwner);
  // Charges bytes that the service keeps for an owner outside the table (its set-on-close
  // notices) to the owner's share and to the total; release() gives them back.
  WriteResult reserve(OwnerId owner, size_t bytes);
  void release(OwnerId owner, size_t bytes);
  // Drops the owner's account (its connection closed); the values it wrote stay, counted in the
  // total only.
  void forgetOwner(OwnerId owner) { ownerBytes_.erase(owner); }
  size_t storedBytes() const { return storedBytes_; }
  size_t maxBytes() const { return maxBytes_; }
  size_t bytesOf(OwnerId owner) const;
  size_t maxBytesPerOwner() const { return maxBytesPerOwner_; }
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
  struct Entry {
    Bytes value;
    OwnerId owner = kNoOwner;
  };
  // Whether a write of `charged` bytes that gives back `releasedTotal` bytes of the table, of
  // which `releasedOwn` were the owner's, stays within both limits; kOk or the one it would pass.
  WriteResult admits(OwnerId owner, size_t releasedTotal, size_t releasedOwn, size_t charged) const;
  void charge(OwnerId owner, size_t bytes);
  void discharge(OwnerId owner, size_t bytes);

  const size_t maxBytes_;
  const size_t maxBytesPerOwner_;
  size_t storedBytes_ = 0;  // every key's and value's bytes, and the reservations
  std::unordered_map<std::string, Entry> values_;
  std::unordered_map<OwnerId, size_t> ownerBytes_;  // live owners with bytes charged
  std::unordered_map<WaiterId, Waiter> waiters_;
  std::unordered_map<std::string, std::vector<WaiterId>> waitersByKey_;
  std::set<std::pair<Deadline, WaiterId>> byDeadline_;
  WaiterId nextId_ = 1;
};

}  // namespace bootstrap
}  // namespace coll
