// The handshakes of one rank's socket connections, run without ever blocking (net_wire.h says
// what they exchange). Connections are opened at first use (transport/domain.h), possibly in the
// middle of a collective, so a dial or an accept must never hold up the executor: every call here
// does what the sockets allow at once and returns, and whoever pumps the domain (the executor
// while it waits, or the progress thread) calls pump() again later.
//
// Who dials: of each pair, the higher rank, whichever end needs the pair first. The lower rank
// only accepts, so two ends that need each other at the same moment never open two connections.
// An incoming connection is kept only when it proves the job's secret and names a member that is
// allowed to dial this rank; strangers, silent connections and bad proofs are refused with a
// warning and cost no one else time: the listener applies the rules of every listener to
// connections not yet proven (common/listener_gate.h: a hello deadline, bounded room that the
// longest-silent connection gives up, rate-limited warnings).
#pragma once

#include <poll.h>

#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/fd.h"
#include "common/hmac.h"
#include "common/listener_gate.h"
#include "transport/domain.h"
#include "transport/net/net_card.h"
#include "transport/net/net_wire.h"

namespace coll {
namespace transport {

class NetConnector {
 public:
  // A socket whose handshake completed: socket `socketIndex` of the pair with `rank`.
  struct Established {
    int rank;
    int socketIndex;
    Fd fd;
  };
  // A dial that cannot complete: the peer's listener is gone or it failed the handshake.
  struct Failure {
    int rank;
    std::string reason;
  };

  // `listener` (borrowed, made non-blocking here) takes the dials of the ranks that
  // `mayDialHere` accepts; `nonce` is this rank's card nonce, which a dialler must present.
  NetConnector(int myRank, const TransportSettings& settings, const Digest256& connectionKey, const uint64_t nonce[2],
               int listener, std::function<bool(int)> mayDialHere);

  // Starts the S dials to `rank`, which listens as `card`.
  void dial(int rank, const NetCard& card);
  // Moves every handshake as far as the sockets allow; appends what completed and what failed.
  void pump(std::vector<Established>* done, std::vector<Failure>* failed);
  // What the progress thread polls to know when pump() has work: the listener and every socket
  // in a handshake, each for what its handshake waits for.
  void addPollFds(std::vector<pollfd>* fds) const;
  bool busy() const { return !handshakes_.empty(); }

 private:
  enum class Stage { kConnecting, kSendHello, kRecvChallenge, kSendProof, kRecvHello, kSendChallenge, kRecvProof };
  static bool isDial(Stage stage) {
    return stage == Stage::kConnecting || stage == Stage::kSendHello || stage == Stage::kRecvChallenge ||
           stage == Stage::kSendProof;
  }
  struct Handshake {
    Stage stage;
    int rank;  // the peer: the one dialled, or (accepting) the one the hello names once read
    Fd fd;
    size_t moved = 0;  // bytes of the current message sent or received
    Deadline deadline;          // a dial's (an accepted connection's is the gate's)
    ListenerGate::Key key = 0;  // an accepted connection's, in the gate
    std::string address;  // the peer's listener, for messages (dials)
    NetHello hello;
    NetChallenge challenge;
    NetProof proof;
  };
  void acceptNew();
  void dropAccepted(ListenerGate::Key key);
  // Advances one handshake; returns "" while it is under way or done (*complete), else why it
  // failed.
  std::string advance(Handshake& h, bool* complete);
  std::string advanceDial(Handshake& h, bool* complete, bool* progressed);
  std::string advanceAccept(Handshake& h, bool* complete, bool* progressed);

  int myRank_;
  const TransportSettings& settings_;
  Digest256 key_;
  uint64_t nonce_[2];
  int listener_;
  std::function<bool(int)> mayDialHere_;
  std::vector<Handshake> handshakes_;
  ListenerGate gate_;
  ListenerGate::Key nextKey_ = 1;
  const ListenerGate::Drop dropUnproven_ = [this](ListenerGate::Key key, const std::string&) { dropAccepted(key); };
};

}  // namespace transport
}  // namespace coll
