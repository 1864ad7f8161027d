// Running calls: on the engine for the call's memory (engineFor, comm_device.cc), with the
// COLL_CHECK exchange, turning an error into the communicator's failure (peers stop waiting for
// this rank at once).
#include <string>
#include <vector>

#include "common/error.h"
#include "src/comm.h"

namespace coll {

void Communicator::run(const CollCall& call, collStream_t stream) {
  if (call.type == CollType::kSend || call.type == CollType::kRecv) {
    // A send or receive outside a group is a group of one; the vector is kept so that a loop of
    // them allocates nothing.
    thread_local std::vector<CollCall> single(1);
    single.resize(1);
    single[0] = call;
    runPointToPoint(single, stream);
    return;
  }
  Engine& engine = engineFor(stream);
  throwIfFailed();
  const uint64_t ticket = recorder_.begin(call, stream != nullptr);
  // Counted where the flight recorder counts it, so that a timeout's "collective N" (describeStall)
  // and its hang report's "#N" name the same call; where the peers can read it (the doorbell's
  // line), for their timeouts.
  ++callCount_;
  bell_->activity.collectivesBegun.store(callCount_, std::memory_order_relaxed);
  try {
    if (params_.checkConsistency) checkConsistency(call);
    engine.run(call, stream);
  } catch (const CollError& e) {
    recorder_.end(ticket, trace::CallState::kFailed, e.code(), engine.lastAlgorithm());
    if (e.code() == collInvalidArgument || e.code() == collInvalidUsage) throw;
    failCall(e);
  }
  // A device call is only enqueued: the host does not see it end.
  recorder_.end(ticket, stream != nullptr ? trace::CallState::kQueued : trace::CallState::kCompleted, collSuccess,
                engine.lastAlgorithm());
}

void Communicator::runPointToPoint(const std::vector<CollCall>& calls, collStream_t stream) {
  Engine& engine = engineFor(stream);
  throwIfFailed();
  const uint64_t firstTicket = recorder_.beginGroup(calls, stream != nullptr);
  auto endAll = [&](trace::CallState state, collResult_t result) {
    recorder_.endGroup(firstTicket, calls.size(), state, result);
  };
  // Where receives from any source can happen, count the messages (comm_any_source.cc).
  if (stream == nullptr && canRecvFromAnySource()) countPointToPoint(calls);
  try {
    engine.runPointToPoint(calls, stream);
  } catch (const CollError& e) {
    endAll(trace::CallState::kFailed, e.code());
    failCall(e);
  }
  endAll(stream != nullptr ? trace::CallState::kQueued : trace::CallState::kCompleted, collSuccess);
}

}  // namespace coll
