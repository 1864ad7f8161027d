// The execution seam: where a call runs, chosen per call by the communicator from the kind of
// memory its buffers are in. The host engine (host_engine.h) runs host-memory calls to
// completion: schedules through the executor over the routes' connections, or native algorithms
// on shared memory. The device engine (device_engine.h) enqueues device-memory calls on the
// caller's CUDA stream as lowered programs. Both report failures into the communicator's one
// health state (src/comm.h: markFailed, asyncError) and both stop when it aborts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collective.h"
#include "common/clock.h"
#include "src/algorithms/algorithm_table.h"
#include "src/coll_call.h"
#include "src/params.h"
#include "transport/exchange_records.h"

namespace coll {

class Engine {
 public:
  virtual ~Engine() = default;
  virtual const char* name() const = 0;
  // One collective: to completion (host), or enqueued on `stream` (device). Throws CollError.
  virtual void run(const CollCall& call, collStream_t stream) = 0;
  // Sends and receives issued together (a group): no ordering between them, so no deadlock.
  virtual void runPointToPoint(const std::vector<CollCall>& calls, collStream_t stream) = 0;
  // Without blocking: collSuccess, or what went wrong in work this engine handed over and no
  // longer watches (device kernels report through host-mapped memory), with a message.
  virtual collResult_t pollError(std::string* message) const {
    (void)message;
    return collSuccess;
  }
  // Stops this engine's running and future work at their next wait (collCommAbort).
  virtual void abort() {}
  // The row the last collective was planned with (Algo::kAuto when none or unknown), for the
  // flight recorder (src/trace/recorder.h).
  virtual Algo lastAlgorithm() const { return Algo::kAuto; }
  // Before teardown: waits until the work this engine handed over (device launches) has ended.
  // Throws collTimeout at the deadline. The host engine hands nothing over.
  virtual void drain(Deadline deadline) { (void)deadline; }
};

namespace transport {
class DeviceChannels;
}
struct DeviceLayout;  // src/plan/device_program.h

// The device engine (device_engine.h) over a device-memory domain's channels, with its device
// current; `layout` (may be null: one host) groups the ranks for two-level plans. In a build
// without CUDA (device_engine_none.cc) it throws collInvalidUsage.
// exchangeRecords: an all-gather among the ranks through host memory, for rank processes that map
// each other's call buffers.
std::unique_ptr<Engine> makeDeviceEngine(transport::DeviceChannels& channels, int rank, int nranks,
                                         const Params& params, int timeoutMs, const DeviceLayout* layout = nullptr,
                                         transport::ExchangeRecords exchangeRecords = nullptr);

}  // namespace coll
