#include "common/random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include "common/error.h"

namespace coll {

void fillRandom(void* data, size_t bytes, const char* what) {
  size_t filled = 0;
  while (filled < bytes) {
    ssize_t n = getrandom(static_cast<uint8_t*>(data) + filled, bytes - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throwSystemError((std::string("getrandom() for ") + what).c_str());
    filled += static_cast<size_t>(n);
  }
}

}  // namespace coll
