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
  try {
    if (params_.checkConsistency) checkConsistency(call);
    ++callCount_;
    // Where the peers can read it (the doorbell's line), for their timeouts (describeStall).
    bell_->activity.collectivesBegun.store(callCount_, std::memory_order_relaxed);
    engine.run(call, stream);
  } catch (const CollError& e) {
    if (e.code() == collInvalidArgument || e.code() == collInvalidUsage) throw;
    failCall(e);
  }
}

void Communicator::runPointToPoint(const std::vector<CollCall>& calls, collStream_t stream) {
  Engine& engine = engineFor(stream);
  throwIfFailed();
  // Where receives from any source can happen, count the messages (comm_any_source.cc).
  if (stream == nullptr && canRecvFromAnySource()) countPointToPoint(calls);
  try {
    engine.runPointToPoint(calls, stream);
  } catch (const CollError& e) {
    failCall(e);
  }
}

}  // namespace coll
