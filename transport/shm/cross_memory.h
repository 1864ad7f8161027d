// Single-copy reads from (and writes to) another process's memory on this host (Linux
// cross-memory attach, process_vm_readv/writev): the kernel copies straight between the peer's
// buffer and ours, with no staging copy in shared memory. It needs the right to ptrace the peer
// (same user, and Yama's ptrace_scope permitting); probeCrossMemory() tells whether it works
// before any plan relies on it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace coll {
namespace transport {

// Copies `bytes` from address `remote` in process `pid` to `local`. A rank that is a thread of
// this process (pid == getpid()) is read with memcpy. Throws CollError(collRemoteError) when the
// peer is gone or the read fails part way.
void readPeerMemory(pid_t pid, uint64_t remote, void* local, size_t bytes);

// Copies `bytes` from `local` to address `remote` in process `pid` (process_vm_writev, which needs
// the same right as a read); memcpy for a thread of this process. Throws as readPeerMemory.
void writePeerMemory(pid_t pid, uint64_t remote, const void* local, size_t bytes);

// True when this process may read and write `pid`'s memory: reads `bytes` at `remote`, compares
// them with `expected`, and writes them back. `remote` must be writable memory of the peer.
bool probeCrossMemory(pid_t pid, uint64_t remote, const void* expected, size_t bytes);

}  // namespace transport
}  // namespace coll
