// device_query.h without CUDA support compiled in: never a device.
#include "transport/p2p/device_query.h"

namespace coll {
namespace transport {

bool cudaCompiledIn() { return false; }

bool cudaDeviceAvailable(std::string* why) {
  if (why != nullptr)
    *why = "this build of libcollective has no CUDA support (COLL_WITH_CUDA=OFF or no nvcc at build time)";
  return false;
}

}  // namespace transport
}  // namespace coll
