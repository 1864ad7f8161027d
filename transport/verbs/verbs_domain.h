// The verbs transport's entry points for the transport table. They name no libibverbs type, so
// the table builds where rdma-core's header is absent (verbs_without_header.cc answers then).
#pragma once

#include <memory>

#include "transport/domain.h"

namespace coll {
namespace transport {

// Whether this process can use verbs: the library (COLL_VERBS_LIBRARY or libibverbs.so.1) loads
// and lists a device. Probed once per process, on first call, with the reason at INFO.
bool verbsUsableHere();
std::unique_ptr<Domain> makeVerbsDomain(const DomainArgs& args);

}  // namespace transport
}  // namespace coll
