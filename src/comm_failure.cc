// The one failure state of a communicator. A call that fails records its error here and every
// transport announces it to the peers (a shared-memory flag with the reason, sockets shut down,
// device kernels asked to stop), so that they stop waiting for this rank at once. Waits check
// the peers' health through every transport; the engines report what they learn later (a device
// kernel that timed out) through asyncError. collCommAbort is a failure this rank chooses.
#include "common/error.h"
#include "common/logging.h"
#include "src/comm.h"

namespace coll {

void Communicator::healthCheck() const {
  if (aborted_.load()) throwError(collRemoteError, "the communicator was aborted (collCommAbort)");
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

}  // namespace coll
