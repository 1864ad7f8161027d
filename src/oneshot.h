// The one-shot path for small messages on one host: every rank copies its whole input into its
// own shared-memory buffer and raises a sequence flag; once every rank's flag shows the call,
// each rank computes its own output straight from the others' buffers, in rank order (so an
// all-reduce gives bitwise-identical results everywhere). One synchronisation per call, which is
// what makes 8-byte latency a fraction of a microsecond.
//
// Two buffers alternate between calls. A rank may overwrite buffer (s % 2) at call s because it
// saw every peer's flag reach s-1 during call s-1, and a peer raises flag s-1 only after it has
// finished reading the buffers of call s-2.
#pragma once

#include <cstdint>

#include "src/coll_call.h"
#include "src/progress.h"
#include "transport/shm/shm_transport.h"

namespace coll {

class OneShot {
 public:
  OneShot(transport::ShmDomain& shm, int rank, int nranks) : shm_(shm), rank_(rank), nranks_(nranks) {}
  void run(const CollCall& call, ProgressWaiter& waiter);

 private:
  void publish(const CollCall& call, uint8_t* mine);
  void waitForAll(uint64_t seq, ProgressWaiter& waiter);
  void computeOutput(const CollCall& call, int buffer);
  // Reduces `count` elements at `offset` of every rank's buffer into dst.
  void reduceAll(const CollCall& call, int buffer, size_t offset, size_t count, void* dst);

  transport::ShmDomain& shm_;
  int rank_;
  int nranks_;
  uint64_t seq_ = 0;
};

}  // namespace coll
