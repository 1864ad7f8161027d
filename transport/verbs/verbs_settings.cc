#include "transport/verbs/verbs_settings.h"

#include <cstdlib>

#include "common/env_setting.h"
#include "transport/verbs/verbs_domain.h"

namespace coll {
namespace transport {

void readVerbsSettings(TransportSettings* s) {
  // The QP attribute fields are 5 and 3 bits wide (0 would mean an infinite timeout).
  s->ibTimeout = static_cast<int>(envInteger("COLL_IB_TIMEOUT", 1, 31, s->ibTimeout));
  s->ibRetryCount = static_cast<int>(envInteger("COLL_IB_RETRY_CNT", 0, 7, s->ibRetryCount));
  // Parsed (and refused) where verbs opens a device: a rank that never selects verbs ignores it.
  if (const char* hca = getenv("COLL_IB_HCA")) s->ibHca = hca;
  s->ibGidIndex = static_cast<int>(envInteger("COLL_IB_GID_INDEX", -1, 255, s->ibGidIndex));
  s->ibQpsPerConnection = static_cast<int>(envInteger("COLL_IB_QPS_PER_CONNECTION", 1, 16, s->ibQpsPerConnection));
  // Only the sender decides (the receiver cannot tell a zero-copy write from a slot's): ranks may
  // differ, so the setting is not shared.
  s->ibZcopyBytes = static_cast<size_t>(envInteger("COLL_IB_ZCOPY_BYTES", 0, 1LL << 50, s->ibZcopyBytes));
}

void describeVerbsHere(PeerInfo* self) { self->verbsDevice = verbsUsableHere() ? 1 : 0; }

}  // namespace transport
}  // namespace coll
