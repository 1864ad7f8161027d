// The secret of a launcher-started job whose ranks all run on this host and that was given no
// COLL_STORE_SECRET (torchrun, mpirun or srun on one node, as they are usually run). Such a job
// needs no network: its rendezvous store listens on loopback only (launch_env.cc), and rank 0
// makes a random secret and leaves it in a file only its user can read, where the other ranks,
// being on the same host as the same user, read it. So only a process of the same user on this
// host (and in the same network namespace) can join: not another host, not another user
// (docs/security.md).
//
// The file: $TMPDIR (else /tmp) / libcollective-<uid> / rendezvous-<netns>-<port>.secret, the
// folder mode 0700 and the file 0600, both owned by the user: anything else (a folder someone else
// made, a link, wider permissions) is refused with a message that says so and how to set
// COLL_STORE_SECRET instead. It holds the secret as 64 hexadecimal digits and a newline. Rank 0
// writes it after its store listens (a new file renamed into place) and removes it when its store
// ends; a file left by an earlier job on the same port is simply replaced.
#pragma once

#include <optional>
#include <string>

#include "bootstrap/store.h"

namespace coll {
namespace bootstrap {

// The secret file's text: exactly 64 hexadecimal digits and a newline; std::nullopt for anything else.
std::optional<Secret> parseHostSecret(const std::string& text);
std::string formatHostSecret(const Secret& secret);

// Where the secret of the one-host job whose store listens on loopback port `port` is kept.
std::string hostSecretPath(int port);

// Rank 0's side: writes `secret` to `path` (making its folder if needed) and removes the file when
// destroyed. Throws collInvalidUsage naming the path when the folder is not the user's alone.
class HostSecretFile {
 public:
  HostSecretFile(std::string path, const Secret& secret);
  ~HostSecretFile();
  HostSecretFile(const HostSecretFile&) = delete;
  HostSecretFile& operator=(const HostSecretFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The other ranks' side: the secret in `path`, waiting until rank 0 has written it or the
// deadline passes (collTimeout naming the file). Throws collInvalidUsage naming the path when the
// file or its folder is not the user's alone, or the file is malformed.
Secret readHostSecret(const std::string& path, Deadline deadline);

}  // namespace bootstrap
}  // namespace coll
