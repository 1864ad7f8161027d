// Running calls: the engine for the call's memory, the COLL_CHECK exchange, and turning an error
// into the communicator's failure (peers stop waiting for this rank at once).
#include <string>

#include "common/cuda_device.h"
#include "common/error.h"
#include "src/comm.h"

namespace coll {

Engine& Communicator::engineFor(collStream_t stream) {
  if (stream == nullptr) return *hostEngine_;
  // A stream means device buffers. Without a usable GPU that is a usage error that says what is
  // missing; with one, the device engine (src/exec/device_engine.h) is not yet connected to the
  // communicator (docs/cuda.md).
  std::string why;
  if (!cudaDeviceAvailable(&why))
    throwError(collInvalidUsage,
               "no CUDA device: stream is not NULL (device buffers), but %s; pass NULL for host buffers", why.c_str());
  throwError(collInvalidUsage,
             "stream is not NULL: device buffers are not yet connected to the communicator in this build (the "
             "CUDA kernels and P2P transport are built; see docs/cuda.md); pass NULL for host buffers");
}

void Communicator::run(const CollCall& call, collStream_t stream) {
  if (call.type == CollType::kSend || call.type == CollType::kRecv) {
    runPointToPoint({call}, stream);
    return;
  }
  Engine& engine = engineFor(stream);
  throwIfFailed();
  try {
    if (params_.checkConsistency) checkConsistency(call);
    ++callCount_;
    engine.run(call, stream);
  } catch (const CollError& e) {
    if (e.code() != collInvalidArgument && e.code() != collInvalidUsage) markFailed(e.code(), e.what());
    throw;
  }
}

void Communicator::runPointToPoint(const std::vector<CollCall>& calls, collStream_t stream) {
  Engine& engine = engineFor(stream);
  throwIfFailed();
  try {
    engine.runPointToPoint(calls, stream);
  } catch (const CollError& e) {
    markFailed(e.code(), e.what());
    throw;
  }
}

}  // namespace coll
