// The rendezvous store: a small key-value service that ranks use during init (and for split) to
// exchange connection blobs. Every blocking call takes a deadline and throws
// CollError(collTimeout) when it passes. Implementations: TcpStoreClient (talks to a
// TcpStoreServer, bootstrap/tcp_store.h), MemoryStore (ranks as threads of one process), and
// PrefixStore (namespaces keys per communicator).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"

namespace coll {
namespace bootstrap {

using Bytes = std::vector<uint8_t>;
// Proves that a connection to a rendezvous store belongs to the job that created it (carried in
// the unique id, or derived from COLL_STORE_SECRET for launcher-started jobs).
using Secret = std::array<uint8_t, 32>;

// Keys and values are bounded so that a malicious or confused peer cannot make the server
// allocate without limit.
constexpr size_t kMaxKeyBytes = 4096;
constexpr size_t kMaxValueBytes = 64u << 20;

class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const Bytes& value) = 0;
  // Blocks until the key exists (or the deadline passes) and returns its value.
  virtual Bytes get(const std::string& key, Deadline deadline) = 0;
  // Atomically adds delta to the integer stored at key (0 when absent) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // Blocks until every key exists.
  virtual void wait(const std::vector<std::string>& keys, Deadline deadline) = 0;
  // True when every key exists; never blocks.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // The numeric local address this process uses to reach the store, or "" when the store is in
  // process memory. The socket transport listens there by default: it is the interface that
  // reaches the rendezvous host (MASTER_ADDR), as NCCL and Gloo choose.
  virtual std::string localAddress() const { return ""; }
  // The job's secret, which this store's connection proved: the socket transport derives the key
  // its connections prove with from it. All zeros for a store in process memory (its ranks are
  // threads of one process, which share the object anyway).
  virtual Secret secret() const { return Secret{}; }
  // Asks the store to set `key` to `value` once this process's connection to it closes: when the
  // process exits, crashes or loses the network. So ranks waiting for this one learn that it is
  // gone at once rather than at their deadline. A key that is already set then is left as it is:
  // the first rank to go is the one to report, not the ranks that failed because of it. Stores in
  // process memory do nothing (their ranks are threads, which do not vanish alone).
  virtual void setOnDisconnect(const std::string& key, const Bytes& value) {}
  // Whether the store's server goes away with this object (rank 0's store of a launcher-started
  // job): the peers' connections then close, whatever they were still to read from it.
  virtual bool ownsServer() const { return false; }
};

// Prepends "prefix/" to every key: one communicator's keys never collide with another's.
class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> base) : prefix_(std::move(prefix)), base_(std::move(base)) {}
  void set(const std::string& key, const Bytes& value) override { base_->set(full(key), value); }
  Bytes get(const std::string& key, Deadline deadline) override { return base_->get(full(key), deadline); }
  int64_t add(const std::string& key, int64_t delta) override { return base_->add(full(key), delta); }
  void wait(const std::vector<std::string>& keys, Deadline deadline) override { base_->wait(fullAll(keys), deadline); }
  bool check(const std::vector<std::string>& keys) override { return base_->check(fullAll(keys)); }
  std::string localAddress() const override { return base_->localAddress(); }
  Secret secret() const override { return base_->secret(); }
  void setOnDisconnect(const std::string& key, const Bytes& value) override { base_->setOnDisconnect(full(key), value); }
  bool ownsServer() const override { return base_->ownsServer(); }
  const std::shared_ptr<Store>& base() const { return base_; }

 private:
  std::string full(const std::string& key) const { return prefix_ + "/" + key; }
  std::vector<std::string> fullAll(const std::vector<std::string>& keys) const {
    std::vector<std::string> result;
    result.reserve(keys.size());
    for (const auto& k : keys) result.push_back(full(k));
    return result;
  }
  std::string prefix_;
  std::shared_ptr<Store> base_;
};

}  // namespace bootstrap
}  // namespace coll
