#include "transport/shm/cross_memory.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/error.h"

namespace coll {
namespace transport {

void readPeerMemory(pid_t pid, uint64_t remote, void* local, size_t bytes) {
  if (bytes == 0) return;
  if (pid == getpid()) {
    memcpy(local, reinterpret_cast<const void*>(remote), bytes);
    return;
  }
  size_t done = 0;
  while (done < bytes) {
    struct iovec localIov = {static_cast<char*>(local) + done, bytes - done};
    struct iovec remoteIov = {reinterpret_cast<void*>(remote + done), bytes - done};
    ssize_t got = process_vm_readv(pid, &localIov, 1, &remoteIov, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      int saved = errno;
      throwError(collRemoteError, "reading %zu bytes from process %d failed after %zu: %s (did it exit?)", bytes,
                 static_cast<int>(pid), done, got < 0 ? strerror(saved) : "no progress");
    }
    done += static_cast<size_t>(got);
  }
}

bool probeCrossMemory(pid_t pid, uint64_t remote, const void* expected, size_t bytes) {
  if (pid == getpid()) return true;
  std::vector<unsigned char> buffer(bytes);
  struct iovec localIov = {buffer.data(), bytes};
  struct iovec remoteIov = {reinterpret_cast<void*>(remote), bytes};
  ssize_t got = process_vm_readv(pid, &localIov, 1, &remoteIov, 1, 0);
  return got == static_cast<ssize_t>(bytes) && memcmp(buffer.data(), expected, bytes) == 0;
}

}  // namespace transport
}  // namespace coll
