// The one failure state of a communicator. A call that fails records its error here and every
// transport announces it to the peers (a shared-memory flag with the reason, sockets shut down,
// device kernels asked to stop), so that they stop waiting for this rank at once. Waits check
// the peers' health through every transport; the engines report what they learn later (a device
// kernel that timed out) through asyncError. collCommAbort is a failure this rank chooses;
// collCommRevoke one that every rank shares and that leaves the communicator to shrink: it goes
// through the transports like any failure, and through each rank's watcher (the store) to ranks
// that no transport connects yet.
//
// Revoke's result is collRemoteError, not a code of its own: a program that handles a dead peer
// already treats collRemoteError as "this communicator is finished: rebuild", which is what a
// revoked communicator asks of it, and the message says "revoked". A new collResult_t value would
// also move collNumResults, which callers may size tables by.
#include "common/error.h"
#include "common/logging.h"
#include "src/comm.h"
#include "src/trace/comm_watcher.h"

namespace coll {

void Communicator::healthCheck() const {
  if (aborted_.load()) throwError(collRemoteError, "the communicator was aborted (collCommAbort)");
  if (const int by = revokedBy_.load(); by >= 0)
    throwError(collRemoteError, "the communicator was revoked (collCommRevoke on rank %d)", by);
  for (const auto& domain : domains_) domain->checkPeers();
}

void Communicator::markFailed(collResult_t code, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(failureMutex_);
    if (asyncError_.load() != collSuccess) return;
    failureMessage_ = message;
    asyncError_.store(code);
  }
  COLL_WARN(kColl, "comm %s rank %d failed: %s", options_.name.c_str(), rank_, message.c_str());
  std::string reason = formatString("rank %d: %s", rank_, message.c_str());
  for (auto& domain : domains_) domain->announceFailure(reason);
  // Device kernels of a failed communicator stop at their next wait, which their peers' kernels
  // then see as this rank stopping.
  if (Engine* device = deviceEngineReady_.load()) device->abort();
}

collResult_t Communicator::asyncError() {
  collResult_t recorded = asyncError_.load();
  if (recorded != collSuccess) return recorded;
  std::string message;
  collResult_t reported = hostEngine_ ? hostEngine_->pollError(&message) : collSuccess;
  // The peers' health as the host transports see it (a failure a peer announced, a peer process
  // that exited: a non-blocking look each). Device work needs this: serialized mode's stream
  // waits have no timeout, so a rank killed mid-collective leaves this rank's stream held for
  // good, and only a host-side check (this one, made by polling collCommGetAsyncError) fails the
  // communicator, which then releases those waits (markFailed -> the device engine's abort).
  if (reported == collSuccess) {
    try {
      for (const auto& domain : domains_) domain->checkPeers();
    } catch (const CollError& e) {
      reported = e.code();
      message = e.what();
    }
  }
  // The device kernels report on themselves in host-mapped memory (a wait past its deadline, a
  // peer that stopped): reading it needs no CUDA call.
  if (Engine* device = deviceEngineReady_.load(); reported == collSuccess && device != nullptr)
    reported = device->pollError(&message);
  if (reported != collSuccess) markFailed(reported, message);
  return asyncError_.load();
}

void Communicator::throwIfFailed() {
  if (asyncError_.load() == collSuccess) return;
  std::lock_guard<std::mutex> lock(failureMutex_);
  throwError(asyncError_.load(), "the communicator failed earlier and cannot be used: %s", failureMessage_.c_str());
}

void Communicator::abort() {
  aborted_.store(true);
  markFailed(collRemoteError, formatString("rank %d called collCommAbort", rank_));
  if (hostEngine_) hostEngine_->abort();
  // Device kernels stop at their next wait; serialized mode's stream waits are released.
  if (Engine* device = deviceEngineReady_.load()) device->abort();
  transport::forceRingDoorbell(bell_);
  dumpTraceFor("abort", kTraceDumpOnAbort);
}

void Communicator::revoke() {
  revokedBy(rank_, false);
  if (watcher_) watcher_->tellRevoked();
}

void Communicator::revokedBy(int rank, bool excluded) {
  if (excluded) excludedBy_.store(rank);
  int expected = -1;
  if (!revokedBy_.compare_exchange_strong(expected, rank)) return;
  // markFailed tells the peers through every transport and stops device kernels at their next
  // wait; the doorbell wakes this rank's own waiter, which then sees revokedBy_ (healthCheck).
  markFailed(collRemoteError,
             excluded ? formatString("the survivors shrank the communicator without this rank (rank %d told it)", rank)
                      : formatString("the communicator was revoked (collCommRevoke on rank %d)", rank));
  if (hostEngine_) hostEngine_->abort();
  transport::forceRingDoorbell(bell_);
}

}  // namespace coll
