// The P2P transport in a build without CUDA support: never a device, and no domain to make.
// Callers need no #ifdef (device_query.h, p2p_domain.h).
#include "common/error.h"
#include "transport/p2p/device_query.h"
#include "transport/p2p/p2p_domain.h"

namespace coll {
namespace transport {

bool cudaCompiledIn() { return false; }

bool cudaDeviceAvailable(std::string* why) {
  if (why != nullptr)
    *why = "this build of libcollective has no CUDA support (COLL_WITH_CUDA=OFF or no nvcc at build time)";
  return false;
}

std::unique_ptr<Domain> makeP2pDomain(const DomainArgs&) {
  throwError(collInvalidUsage, "p2p: this build of libcollective has no CUDA support (COLL_WITH_CUDA=OFF)");
}

}  // namespace transport
}  // namespace coll
