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
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  collComm_t handle() const { return comm_; }

 private:
  collComm_t comm_ = nullptr;
};

}  // namespace torch_collective
