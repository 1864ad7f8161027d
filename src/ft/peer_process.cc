#include "src/ft/peer_process.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace coll {
namespace ft {

ProcessState peerProcessState(const transport::PeerInfo& peer, const transport::PeerInfo& self) {
  if (peer.machineHash != self.machineHash || peer.pid <= 0) return ProcessState::kUnknown;
  if (peer.pid == self.pid) return ProcessState::kRunning;  // ranks that are threads of this process
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(peer.pid));
  FILE* file = fopen(path, "re");
  if (file == nullptr) return ProcessState::kGone;
  char line[512];
  const bool read = fgets(line, sizeof(line), file) != nullptr;
  fclose(file);
  if (!read) return ProcessState::kGone;
  // "pid (comm) S ...": the command may hold spaces and parentheses, the state follows the last ')'.
  const char* close = strrchr(line, ')');
  if (close == nullptr || close[1] != ' ') return ProcessState::kUnknown;
  switch (close[2]) {
    case 'Z':  // exited, not yet reaped by its parent
    case 'X':
      return ProcessState::kGone;
    case 'T':  // stopped by a signal
    case 't':  // stopped by a tracer
      return ProcessState::kStopped;
    default:
      return ProcessState::kRunning;
  }
}

const char* describeProcessState(ProcessState state) {
  switch (state) {
    case ProcessState::kStopped:
      return "its process is stopped";
    case ProcessState::kGone:
      return "its process has exited";
    default:
      return "";
  }
}

}  // namespace ft
}  // namespace coll
