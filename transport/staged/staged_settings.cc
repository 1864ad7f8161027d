#include "transport/staged/staged_settings.h"

#include <cstdlib>
#include <cstring>

#include "common/error.h"

namespace coll {
namespace transport {

void readStagedSettings(TransportSettings* s) {
  const char* value = getenv("COLL_STAGED_RECV");
  if (value == nullptr || value[0] == '\0') return;
  if (std::strcmp(value, "mapped") == 0) {
    s->stagedCopyReceive = false;
  } else if (std::strcmp(value, "copy") == 0) {
    s->stagedCopyReceive = true;
  } else {
    throwError(collInvalidUsage,
               "COLL_STAGED_RECV=%s: expected mapped (the kernels reduce from the pinned slots) or copy (a "
               "copy engine moves them into device memory first)",
               value);
  }
}

}  // namespace transport
}  // namespace coll
