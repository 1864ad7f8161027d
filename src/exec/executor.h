// The host executor: runs one rank's schedule over the transports. Steps run in order; a run of
// steps chained by joinNext progresses together. Each step moves slice by slice, one transport
// slot per slice: it waits until every receive peer has a slot and every send peer has a free
// one, then makes one pass of reduceCopy from the received slots and the local source into the
// local destination and the send slots. Nothing blocks inside a round; when a round moves
// nothing the ProgressWaiter spins or sleeps.
//
// Every slot goes out with its call's tag and must arrive with this rank's (src/call_tag.h): a
// received slot of another call (a count or datatype that differs) ends the call with an error
// naming both, before a byte of it is copied anywhere.
#pragma once

#include <cstddef>
#include <vector>

#include "src/algorithms/schedule.h"
#include "src/coll_call.h"
#include "src/exec/progress.h"
#include "transport/transport.h"

namespace coll {

// A connection, once returned for a peer, stays the same object for the source's lifetime: the
// executor keeps the pointers (a lookup per slice took a lock in the domain).
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
  uint64_t tag = 0;  // the call's tag (src/call_tag.h); a step's own tag, where it has one, wins
  size_t elemSize = 1;
  int nranks = 1;
  bool streamOutput = false;  // write the receive buffer with non-temporal stores
  // Point-to-point groups that also receive: sends may go by a single copy where a transport
  // offers it (transport.h, singleCopyFor). Such a send returns only once the receiver has
  // read it; a group of sends alone stays eager (it may return before any receiver arrives).
  bool singleCopySends = false;
  // With singleCopySends: every send a single copy could carry takes it, past the transport's
  // window too (the host engine's measured choice for large messages, host_engine.h).
  bool singleCopyLarge = false;
};

class Executor {
 public:
  Executor(ConnectionSource& connections, int rank, int nranks);
  void run(const Schedule& schedule, const ExecBuffers& buffers, ProgressWaiter& waiter);
  // Runs a group of sends and receives that each fit one slot, with at most one of each per peer,
  // without a schedule: acquire every send slot, fill and post them, then take each receive as it
  // arrives. Returns false, having touched nothing, when the group does not qualify or a send slot
  // is still in flight; the caller then runs the group's schedule. At 8 bytes the schedule's
  // bookkeeping took longer than the transfer.
  bool tryRunSmallPointToPoint(const std::vector<CollCall>& calls, ProgressWaiter& waiter);
  // The same for a variable-count all-to-all whose every pair's message fits one slot, with the
  // pairwise schedule's tags (so a peer that runs the schedule exchanges with this rank alike),
  // then the rank's own block. Planning the call and walking its schedule cost more than the
  // exchange.
  bool tryRunSmallAllToAllV(const CollCall& call, ProgressWaiter& waiter);

 private:
  // One send or receive of an exchange small enough for one slot each (tryRunSlotTransfers).
  struct SlotTransfer {
    int peer;
    bool send;
    const void* from;  // a send's bytes
    void* to;          // where a receive's bytes land
    size_t bytes;
    uint64_t tag;  // what the message carries, or must arrive with (src/call_tag.h)
    static SlotTransfer sendTo(int peer, const void* from, size_t bytes, uint64_t tag) {
      return {peer, true, from, nullptr, bytes, tag};
    }
    static SlotTransfer receiveFrom(int peer, void* to, size_t bytes, uint64_t tag) {
      return {peer, false, nullptr, to, bytes, tag};
    }
  };
  static constexpr size_t kMaxSlotTransfers = 2 * kMaxStepPeers;
  // Acquires every send's slot, fills and posts them, then takes each receive as it arrives;
  // false, having touched nothing, when one does not fit a slot, a peer appears twice on one side
  // or a send slot is still in flight.
  bool tryRunSlotTransfers(const SlotTransfer* transfers, size_t count, ProgressWaiter& waiter);
  struct ActiveStep {
    const Step* step;
    size_t done;
    bool landingOffered;
  };
  // Offers the step's receive connection its destination (transport.h, offerLanding) when the
  // step only copies what one peer sends into the caller's memory.
  void offerLanding(const Step& step, transport::RecvConnection* recv, const ExecBuffers& buffers, size_t sliceElems);
  // Posts the slice to the step's send peers not posted yet (it nulls sends[i] once posted): from
  // the caller's memory where external[i], else the slot filled for it (unless externalOnly, for
  // the sends that may go before the slots are filled).
  void postSends(const Step& step, transport::SendConnection** sends, const bool* external,
                 const void* fromCallerMemory, size_t sliceBytes, uint64_t tag, bool externalOnly);
  // Throws when a slot from `peer` does not belong where this rank expects it: another call's
  // tag (a count or datatype that differs), or another size.
  void checkArrival(int peer, uint64_t tag, size_t bytes, uint64_t expectedTag, size_t expectedBytes) const {
    if (tag != expectedTag || bytes != expectedBytes) throwArrivalMismatch(peer, tag, bytes, expectedTag, expectedBytes);
  }
  [[noreturn]] void throwArrivalMismatch(int peer, uint64_t tag, size_t bytes, uint64_t expectedTag,
                                         size_t expectedBytes) const;
  // Ends every offer of this call (on return and on error alike).
  void withdrawLandings();
  // Moves one slice of a step if every peer is ready; returns true if it moved.
  bool advance(ActiveStep& active, const ExecBuffers& buffers);
  // Claims the step's connections for this round; false if an earlier step holds one.
  bool claim(const Step& step);
  // Waits until every frame sent straight from the caller's buffers has gone out.
  void awaitExternalSends(ProgressWaiter& waiter);
  // A call that fails returns without waiting for them: the transports let go of its memory.
  void abandonExternalSends();
  transport::SendConnection* sendTo(int peer);
  transport::RecvConnection* recvFrom(int peer);

  ConnectionSource& connections_;
  int rank_;
  int nranks_;
  std::vector<ActiveStep> batch_;
  // A step that only copies locally, in a batch with transfers, moves kLocalSliceBytes per round
  // (advance, run) instead of all at once: the transfers, which this thread drives (sockets),
  // keep moving while it copies.
  bool yieldsToTransfers(const Step& step) const { return batch_.size() > 1 && step.nsend + step.nrecv == 0; }
  static constexpr size_t kLocalSliceBytes = 64 << 10;
  std::vector<uint32_t> sendClaim_;  // round number that claimed each send connection
  std::vector<uint32_t> recvClaim_;
  std::vector<uint8_t> externalSent_;              // per peer: this call sent from the caller's memory
  std::vector<transport::SendConnection*> sends_;  // per peer, once first asked for
  std::vector<transport::RecvConnection*> recvs_;
  std::vector<transport::RecvConnection*> landings_;  // offered a landing during this call
  uint32_t round_ = 0;
};

}  // namespace coll
