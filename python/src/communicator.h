// One libcollective communicator, owned: created from a unique id that rank 0 made and the others
// received through torch's store, destroyed with the process group.
#pragma once

#include <string>

#include "collective.h"

namespace torch_collective {

class Communicator {
 public:
  // A fresh collUniqueId as bytes, for torch's store (which moves byte strings). Rank 0 calls it;
  // it also starts the rendezvous server that the id names.
  static std::string newUniqueId();

  // Blocks until every rank has joined. timeoutMs <= 0 keeps the library's default
  // (COLL_TIMEOUT_MS, else 300 s); it also bounds every later call on this communicator.
  Communicator(int rank, int size, const std::string& uniqueId, int timeoutMs);
  // Owns `comm` (one that collCommSplit made with this timeout).
  Communicator(collComm_t comm, int timeoutMs) : comm_(comm), timeoutMs_(timeoutMs) {}
  ~Communicator();
  static int rankOf(collComm_t comm);
  static int sizeOf(collComm_t comm);
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  collComm_t handle() const { return comm_; }
  // The bound on every wait of this communicator, in ms (the library's default when none was set).
  int timeoutMs() const;
  // collCommAbort: ends the call in flight with an error, tells the peers, frees the communicator.
  void abort();

 private:
  collComm_t comm_ = nullptr;
  int timeoutMs_ = -1;
};

}  // namespace torch_collective
