#include "transport/shm/cross_memory.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/error.h"

namespace coll {
namespace transport {

namespace {

// One direction of a cross-memory copy, repeated until every byte moved: the kernel may move
// fewer than asked.
void copyWithPeer(pid_t pid, uint64_t remote, void* local, size_t bytes, bool write) {
  if (bytes == 0) return;
  if (pid == getpid()) {
    if (write) {
      memcpy(reinterpret_cast<void*>(remote), local, bytes);
    } else {
      memcpy(local, reinterpret_cast<const void*>(remote), bytes);
    }
    return;
  }
  size_t done = 0;
  while (done < bytes) {
    struct iovec localIov = {static_cast<char*>(local) + done, bytes - done};
    struct iovec remoteIov = {reinterpret_cast<void*>(remote + done), bytes - done};
    ssize_t moved = write ? process_vm_writev(pid, &localIov, 1, &remoteIov, 1, 0)
                          : process_vm_readv(pid, &localIov, 1, &remoteIov, 1, 0);
    if (moved < 0 && errno == EINTR) continue;
    if (moved <= 0) {
      int saved = errno;
      throwError(collRemoteError, "%s %zu bytes %s process %d failed after %zu: %s (did it exit?)",
                 write ? "writing" : "reading", bytes, write ? "to" : "from", static_cast<int>(pid), done,
                 moved < 0 ? strerror(saved) : "no progress");
    }
    done += static_cast<size_t>(moved);
  }
}

}  // namespace

void readPeerMemory(pid_t pid, uint64_t remote, void* local, size_t bytes) {
  copyWithPeer(pid, remote, local, bytes, /*write=*/false);
}

void writePeerMemory(pid_t pid, uint64_t remote, const void* local, size_t bytes) {
  // process_vm_writev only reads the local iovec; it is declared non-const.
  copyWithPeer(pid, remote, const_cast<void*>(local), bytes, /*write=*/true);
}

bool probeCrossMemory(pid_t pid, uint64_t remote, const void* expected, size_t bytes) {
  if (pid == getpid()) return true;
  std::vector<unsigned char> buffer(bytes);
  struct iovec localIov = {buffer.data(), bytes};
  struct iovec remoteIov = {reinterpret_cast<void*>(remote), bytes};
  ssize_t got = process_vm_readv(pid, &localIov, 1, &remoteIov, 1, 0);
  if (got != static_cast<ssize_t>(bytes) || memcmp(buffer.data(), expected, bytes) != 0) return false;
  // Writing the same bytes back changes nothing, and proves a write works too (a broadcast's root
  // writes into the other ranks' outputs).
  ssize_t put = process_vm_writev(pid, &localIov, 1, &remoteIov, 1, 0);
  return put == static_cast<ssize_t>(bytes);
}

}  // namespace transport
}  // namespace coll
