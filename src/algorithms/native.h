// Native algorithms: rows of the algorithm table that run a call themselves instead of handing
// the executor a schedule, on a capability the transports offer beyond connections. Today both
// run on memory the ranks of one host share (transport/local_memory.h): the one-shot path for
// small messages (oneshot.h) and direct reads for large ones (direct_read.h).
#pragma once

#include <cstddef>
#include <memory>

#include "src/coll_call.h"
#include "transport/local_memory.h"

namespace coll {

class PeerCalls;

// How a native algorithm waits for its peers: the host executor's waiter (src/exec/progress.h),
// which spins, sleeps, and checks the deadline and the peers' health, so that a wait can end in
// an error but never in a hang.
class PeerWaiter {
 public:
  virtual ~PeerWaiter() = default;
  // After a round that moved nothing.
  virtual void idle() = 0;
  // After a round that moved something.
  virtual void progressed() = 0;
};

struct NativeArgs {
  transport::LocalMemory* memory = nullptr;
  int rank = 0;
  int nranks = 1;
  size_t streamingBytes = 0;  // COLL_STREAMING_BYTES
  size_t oneshotBytes = 0;    // each one-shot buffer's capacity (COLL_ONESHOT_BYTES)
  // Which call each rank runs (src/exec/peer_calls.h): to name a peer's call that differs from
  // this rank's where its bytes do not say.
  PeerCalls* peerCalls = nullptr;
};

class NativeRunner {
 public:
  virtual ~NativeRunner() = default;
  // Runs the call to completion on this rank (every rank calls it with the same call).
  virtual void run(const CollCall& call, PeerWaiter& waiter) = 0;
};

}  // namespace coll
