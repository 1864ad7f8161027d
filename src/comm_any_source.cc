// Receive from any source (collRecvAny). The library's receives name their peer, and the FIFO
// between two ranks also carries their collectives' bytes, so what waits in it cannot tell a
// receiver that a message is there: a peer that has gone on into a collective may already have
// posted its share. Instead every rank publishes, in its shared-memory area, how many host-memory
// sends it has started to each rank (NativeArea::pointToPointSent), and each rank counts the
// messages its receives took from each peer. A receive from any source waits until some peer's
// count is ahead of what this rank took from it, then receives from that peer by name, which
// takes that peer's oldest message, as between two ranks messages always match in order. Named
// receives are counted too, so the two kinds mix.
//
// A send costs one store to a line of its own rank's area, which no one reads unless a receive
// from any source looks; only where every rank shares this host's memory (localMemory_). Calls
// on device memory are not counted: collRecvAny takes host buffers.
#include <string>
#include <vector>

#include "common/error.h"
#include "src/comm.h"

namespace coll {

bool Communicator::canRecvFromAnySource() const {
  return localMemory_ != nullptr && nranks_ <= transport::NativeArea::kAnySourceRanks;
}

void Communicator::countPointToPoint(const std::vector<CollCall>& calls) {
  if (receivedFrom_.empty()) {
    receivedFrom_.assign(nranks_, 0);
    sentCounts_ = localMemory_->area(rank_)->pointToPointSent;
  }
  bool emptySend = false;
  for (const CollCall& call : calls) {
    if (call.type == CollType::kSend) {
      std::atomic<uint64_t>& sent = sentCounts_[call.peer];
      // This rank alone writes its counts: no read-modify-write needed. Release: a receiver that
      // sees the count and then takes the message finds it in order behind everything before.
      sent.store(sent.load(std::memory_order_relaxed) + 1, std::memory_order_release);
      emptySend = emptySend || call.count == 0;
    } else {
      ++receivedFrom_[call.peer];
    }
  }
  // A send posts a slot, which rings its receiver; one of zero bytes moves nothing, so ring here
  // for a receiver that sleeps waiting for any sender.
  if (emptySend) localMemory_->ringPeers();
}

int Communicator::pendingSender() {
  for (int step = 0; step < nranks_; ++step) {
    const int sender = (nextSender_ + step) % nranks_;
    const uint64_t sent = localMemory_->area(sender)->pointToPointSent[rank_].load(std::memory_order_acquire);
    if (sent > receivedFrom_[sender]) {
      // The search starts after the rank chosen last, so that no sender is always preferred.
      nextSender_ = (sender + 1) % nranks_;
      return sender;
    }
  }
  return -1;
}

int Communicator::recvFromAnySource(const CollCall& call) {
  if (!canRecvFromAnySource()) {
    if (localMemory_ != nullptr)
      throwError(collInvalidUsage,
                 "collRecvAny: this communicator has %d ranks; receive from any source takes at most %d: name the "
                 "source with collRecv",
                 nranks_, transport::NativeArea::kAnySourceRanks);
    throwError(collInvalidUsage,
               "collRecvAny: receive from any source needs every rank of the communicator on this host, in shared "
               "memory (ranks on other hosts, or shared memory turned off with COLL_TRANSPORTS): name the source "
               "with collRecv (collCommRecvAnyAvailable says which communicators can)");
  }
  throwIfFailed();
  if (receivedFrom_.empty()) countPointToPoint({});
  int sender = -1;
  try {
    hostEngine_->waitUntil("RecvAny", [&] { return (sender = pendingSender()) >= 0; });
  } catch (const CollError& e) {
    markFailed(e.code(), e.what());
    throw;
  }
  CollCall named = call;
  named.peer = sender;
  run(named, nullptr);
  return sender;
}

}  // namespace coll
