// The P2P transport in a build without CUDA support: no domain to make. Callers need no #ifdef
// (p2p_domain.h).
#include "common/error.h"
#include "transport/p2p/p2p_domain.h"

namespace coll {
namespace transport {

std::unique_ptr<Domain> makeP2pDomain(const DomainArgs&) {
  throwError(collInvalidUsage, "p2p: this build of libcollective has no CUDA support (COLL_WITH_CUDA=OFF)");
}

}  // namespace transport
}  // namespace coll
