// The one failure state of a communicator. A call that fails records its error here and every
// transport announces it to the peers (a shared-memory flag with the reason, sockets shut down,
// device kernels asked to stop), so that they stop waiting for this rank at once. Waits check
// the peers' health through every transport; the engines report what they learn later (a device
// kernel that timed out) through asyncError. collCommAbort is a failure this rank chooses;
// collCommRevoke one that every rank shares and that leaves the communicator to shrink: it goes
// through the transports like any failure, and through each rank's watcher (the store) to ranks
// that no transport connects yet. A failure that names calls which differ between ranks
// (src/call_tag.h) also goes to the store, where peers across a network transport, which see
// only a connection close, read it.
//
// Revoke's result is collRemoteError, not a code of its own: a program that handles a dead peer
// already treats collRemoteError as "this communicator is finished: rebuild", which is what a
// revoked communicator asks of it, and the message says "revoked". A new collResult_t value would
// also move collNumResults, which callers may size tables by.
#include <algorithm>

#include "common/error.h"
#include "common/logging.h"
#include "src/call_tag.h"
#include "src/comm.h"
#include "src/trace/comm_watcher.h"

namespace coll {
namespace {

// A waiting rank looks at its peers about once a millisecond: a peer in the call that has not
// looked for this long (or half the timeout, if shorter) is not waiting but stopped or stuck.
constexpr int64_t kStallQuietNs = 1000000000;

// Where a communicator's ranks leave the message of a mismatch (src/call_tag.h), in its store.
constexpr const char* kMismatchKey = "failure/mismatch";

}  // namespace

void Communicator::failCall(const CollError& error) {
  const bool mismatch = dynamic_cast<const CallMismatchError*>(&error) != nullptr;
  std::string message = error.what();
  // Shared memory carries a failed peer's message to its peers; the network transports carry only
  // the failure (a connection closes). A peer across them reads a mismatch's message from the store.
  const bool overTheNetwork = localMemory_ == nullptr;
  bool namesCalls = mismatch;
  if (overTheNetwork && !mismatch && error.code() == collRemoteError) {
    const std::string shared = sharedMismatch();
    if (!shared.empty()) message = formatString("%s (this rank saw: %s)", shared.c_str(), error.what());
    namesCalls = !shared.empty();
  }
  // The rank that found the mismatch leaves its message; the ones that learn of it find it there.
  if (overTheNetwork && mismatch) shareMismatch(formatString("rank %d: %s", rank_, message.c_str()));
  // A timeout names the ranks the transports saw stall (describeStall); the hang report adds
  // what each rank's flight recorder says through the store (comm_trace.cc).
  if (error.code() == collTimeout) {
    const std::string line = reportHang();
    if (!line.empty()) message += "; hang report: " + line;
  }
  markFailed(error.code(), message);
  if (!namesCalls && message == error.what()) throw error;
  if (namesCalls) {
    CallMismatchError failure(error.code(), message);
    failure.setCommunicator(error.communicator());
    throw failure;
  }
  CollError failure(error.code(), message);
  failure.setCommunicator(error.communicator());
  throw failure;
}

void Communicator::shareMismatch(const std::string& message) {
  // Before the domains tell the peers (markFailed): a peer that learns of the failure then finds
  // the message already here. A store that cannot take it leaves the peers the bare failure.
  try {
    store_->set(kMismatchKey, bootstrap::Bytes(message.begin(), message.end()));
  } catch (const CollError& e) {
    COLL_INFO(kColl, "rank %d could not leave its failure's message in the store: %s", rank_, e.what());
  }
}

std::string Communicator::sharedMismatch() {
  // A deadline of now: the store answers at once, with the message or without it.
  try {
    const bootstrap::Bytes value = store_->get(kMismatchKey, Clock::now());
    return std::string(value.begin(), value.end());
  } catch (const CollError&) {
    return "";
  }
}

void Communicator::healthCheck() const {
  if (aborted_.load()) throwError(collRemoteError, "the communicator was aborted (collCommAbort)");
  if (const int by = revokedBy_.load(); by >= 0)
    throwError(collRemoteError, "the communicator was revoked (collCommRevoke on rank %d)", by);
  for (const auto& domain : domains_) domain->checkPeers();
}

std::string Communicator::describeStall() const {
  const int64_t quietNs = std::min<int64_t>(kStallQuietNs, static_cast<int64_t>(options_.timeoutMs) * 500000);
  std::string blame;
  for (const auto& domain : domains_) {
    const std::string seen = domain->describeStall(callCount_, quietNs);
    if (!seen.empty()) blame += (blame.empty() ? "" : "; ") + seen;
  }
  return blame;
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
