// Built where rdma-core's header is absent: verbs is never usable, so no route ever asks for it.
#include "common/error.h"
#include "common/logging.h"
#include "transport/verbs/verbs_domain.h"

namespace coll {
namespace transport {

bool verbsUsableHere() {
  static const bool logged = [] {
    COLL_INFO(kTransport, "verbs unavailable: built without rdma-core's header (libibverbs-dev)");
    return true;
  }();
  (void)logged;
  return false;
}

std::unique_ptr<Domain> makeVerbsDomain(const DomainArgs&) {
  throwError(collInternalError, "verbs transport: this build has none (no libibverbs-dev at build time)");
}

}  // namespace transport
}  // namespace coll
