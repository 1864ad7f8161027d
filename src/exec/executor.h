// The host executor: runs one rank's schedule over the transports. Steps run in order; a run of
// steps chained by joinNext progresses together. Each step moves slice by slice, one transport
// slot per slice: it waits until every receive peer has a slot and every send peer has a free
// one, then makes one pass of reduceCopy from the received slots and the local source into the
// local destination and the send slots. Nothing blocks inside a round; when a round moves
// nothing the ProgressWaiter spins or sleeps.
#pragma once

#include <cstddef>
#include <vector>

#include "src/algorithms/schedule.h"
#include "src/coll_call.h"
#include "src/exec/progress.h"
#include "transport/transport.h"

namespace coll {

class ConnectionSource {
 public:
  virtual ~ConnectionSource() = default;
  virtual transport::SendConnection* sendConnection(int peer) = 0;
  virtual transport::RecvConnection* recvConnection(int peer) = 0;
};

struct ExecBuffers {
  const void* send = nullptr;
  void* recv = nullptr;
  // The buffers' whole extents, for transports that register the caller's memory once per call
  // (transport.h, CallerBuffer); 0 where unknown: a step's own range stands in.
  size_t sendBytes = 0;
  size_t recvBytes = 0;
  collDataType_t datatype = collUint8;
  collRedOp_t op = collSum;
  size_t elemSize = 1;
  int nranks = 1;
  bool streamOutput = false;  // write the receive buffer with non-temporal stores
};

class Executor {
 public:
  Executor(ConnectionSource& connections, int nranks);
  void run(const Schedule& schedule, const ExecBuffers& buffers, ProgressWaiter& waiter);

 private:
  struct ActiveStep {
    const Step* step;
    size_t done;
  };
  // Moves one slice of a step if every peer is ready; returns true if it moved.
  bool advance(ActiveStep& active, const ExecBuffers& buffers);
  // Claims the step's connections for this round; false if an earlier step holds one.
  bool claim(const Step& step);
  // Waits until every frame sent straight from the caller's buffers has gone out.
  void awaitExternalSends(ProgressWaiter& waiter);

  ConnectionSource& connections_;
  std::vector<ActiveStep> batch_;
  std::vector<uint32_t> sendClaim_;  // round number that claimed each send connection
  std::vector<uint32_t> recvClaim_;
  std::vector<uint8_t> externalSent_;  // per peer: this call sent from the caller's memory
  uint32_t round_ = 0;
};

}  // namespace coll
