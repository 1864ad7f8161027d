// Whether a peer's process still runs, where this rank can look: on its own machine (same kernel
// and network namespace, so the same pids), through /proc. A shrink stops waiting at once for a
// peer whose process has exited, and a hang report says that a silent peer is stopped (SIGSTOP,
// a debugger) or gone rather than only that it did not answer. Elsewhere the answer is kUnknown
// and the caller relies on its deadline.
#pragma once

#include "transport/peer_info.h"

namespace coll {
namespace ft {

enum class ProcessState { kUnknown, kRunning, kStopped, kGone };

ProcessState peerProcessState(const transport::PeerInfo& peer, const transport::PeerInfo& self);
// "its process is stopped", "its process has exited", or "" (running or unknown).
const char* describeProcessState(ProcessState state);

}  // namespace ft
}  // namespace coll
