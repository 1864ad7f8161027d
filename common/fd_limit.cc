#include "common/fd_limit.h"

#include <sys/resource.h>

#include <algorithm>

#include "common/logging.h"

namespace coll {
namespace {

size_t asCount(rlim_t value) { return value == RLIM_INFINITY ? kWantedOpenFiles * 16 : static_cast<size_t>(value); }

}  // namespace

size_t raiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  const rlim_t wanted = std::min<rlim_t>(limit.rlim_max, static_cast<rlim_t>(kWantedOpenFiles));
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < wanted) {
    const rlim_t before = limit.rlim_cur;
    limit.rlim_cur = wanted;
    if (setrlimit(RLIMIT_NOFILE, &limit) == 0) {
      COLL_INFO(kInit,
                "raised the open-file limit (RLIMIT_NOFILE, soft) from %llu to %llu (hard limit %llu), so that a flood "
                "of connections to a listener cannot use every descriptor",
                static_cast<unsigned long long>(before), static_cast<unsigned long long>(wanted),
                static_cast<unsigned long long>(limit.rlim_max));
    }
  }
  return openFileLimit();
}

size_t openFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  return asCount(limit.rlim_cur);
}

}  // namespace coll
