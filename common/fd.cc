#include "common/fd.h"

#include <unistd.h>

namespace coll {

void Fd::reset(int fd) {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
}

}  // namespace coll
