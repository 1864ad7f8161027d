// engine.h's makeDeviceEngine in a build without CUDA: there is no device engine. The
// communicator refuses a stream before it gets here ("no CUDA device"); this is the backstop.
#include "common/error.h"
#include "src/exec/engine.h"

namespace coll {

std::unique_ptr<Engine> makeDeviceEngine(transport::DeviceChannels&, int, int, const Params&, int, const DeviceLayout*,
                                         transport::ExchangeRecords) {
  throwError(collInvalidUsage, "no CUDA device: this build of libcollective has no CUDA support");
}

}  // namespace coll
