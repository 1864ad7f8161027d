// Where the survivors of a communicator meet to shrink it, whoever died: the rendezvous store
// lives in one process (rank 0's, under collCommInitFromEnv and torch), and a shrink must work
// after that process died too. So every rank of a communicator on a TCP store binds a listening
// socket at init (MeetingListener: one descriptor, no thread) and publishes its address with its
// init record. When a shrink starts, every survivor starts a store server on its own listener,
// then meets the others at the lowest rank whose server answers: ranks whose process has exited
// are skipped at once, a refused connection at once, and a rank that accepts but does not answer
// (stopped, or not in the shrink) after `patience`. Every survivor probes in the same order, so
// they meet at the same place. The shrunk communicator's store is its new rank 0's server, which
// then lives as long as that communicator; the others end when idle (bootstrap/unique_id.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "collective.h"
#include "common/clock.h"
#include "common/fd.h"

namespace coll {
namespace ft {

// A rank's meeting address as it travels in the init record: fixed size, NUL-padded.
struct MeetingCard {
  char host[62] = {};  // numeric; empty: this rank has no listener (a store in process memory)
  uint16_t port = 0;
  bool empty() const { return port == 0; }
  std::string hostString() const;
};
static_assert(sizeof(MeetingCard) == 64, "MeetingCard travels in the init record as 64 bytes");

// Bound at init, kept for the communicator's life, handed to the server at a shrink.
class MeetingListener {
 public:
  // Listens on `host` (the address that reaches the rendezvous store), an ephemeral port.
  explicit MeetingListener(const std::string& host);
  const MeetingCard& card() const { return card_; }
  // The socket, for the server; the listener is empty afterwards.
  Fd take() { return std::move(fd_); }
  bool taken() const { return !fd_.valid(); }

 private:
  Fd fd_;
  MeetingCard card_;
};

// One rank's part in a shrink's meeting: its own server, and the store it met the others at.
class MeetingPoint {
 public:
  // Starts serving a store on `listener` with the job's secret.
  MeetingPoint(Fd listener, const std::string& host, const bootstrap::Secret& secret);
  // Ends this rank's server once idle, unless keepServer() handed it over.
  ~MeetingPoint();
  MeetingPoint(const MeetingPoint&) = delete;
  MeetingPoint& operator=(const MeetingPoint&) = delete;

  // Connects to the lowest rank of `cards` whose server answers (above). `gone(r)` says a rank's
  // process is known to have exited. Throws collRemoteError when no rank answers, which cannot
  // happen while this rank's own server runs (it answers itself).
  std::shared_ptr<bootstrap::Store> meet(const std::vector<MeetingCard>& cards, int rank,
                                         const std::function<bool(int)>& gone, std::chrono::milliseconds patience);
  int meetingRank() const { return meetingRank_; }

  // The id naming rank r's server (every survivor's server runs until the shrink is over).
  collUniqueId idOf(const MeetingCard& card) const;
  // This rank hosts the shrunk communicator's store: the id of its server, which from now on
  // ends when the communicator built on it releases it (bootstrap::releaseUniqueIdServer).
  collUniqueId keepServer();

 private:
  bootstrap::Secret secret_;
  collUniqueId ownId_;
  bool kept_ = false;
  int meetingRank_ = -1;
};

}  // namespace ft
}  // namespace coll
