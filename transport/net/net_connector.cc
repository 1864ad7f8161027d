#include "transport/net/net_connector.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.h"
#include "common/logging.h"
#include "common/random.h"
#include "common/socket.h"

namespace coll {
namespace transport {
namespace {

// An incoming connection must have proven itself by then; connections read side by side while
// their hellos arrive, at most this many (the rules every listener applies: listener_gate.h).
constexpr auto kHelloTimeout = std::chrono::seconds(5);
constexpr size_t kMaxHandshakes = 1024;

enum class Io { kDone, kLater, kClosed };

// Sends or receives what is left of one handshake message, without blocking.
Io moveBytes(int fd, bool sending, void* message, size_t bytes, size_t* moved, std::string* error) {
  while (*moved < bytes) {
    char* at = static_cast<char*>(message) + *moved;
    ssize_t n = sending ? send(fd, at, bytes - *moved, MSG_NOSIGNAL | MSG_DONTWAIT)
                        : recv(fd, at, bytes - *moved, MSG_DONTWAIT);
    if (n > 0) {
      *moved += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return Io::kLater;
    *error = n == 0 ? "closed during the handshake" : formatString("handshake I/O failed: %s", strerror(errno));
    return Io::kClosed;
  }
  *moved = 0;
  return Io::kDone;
}

}  // namespace

NetConnector::NetConnector(int myRank, const TransportSettings& settings, const Digest256& connectionKey,
                           const uint64_t nonce[2], int listener, std::function<bool(int)> mayDialHere)
    : myRank_(myRank),
      settings_(settings),
      key_(connectionKey),
      nonce_{nonce[0], nonce[1]},
      listener_(listener),
      mayDialHere_(std::move(mayDialHere)),
      gate_(formatString("rank %d's socket listener %s", myRank, localAddressOf(listener).toString().c_str()),
            LogSubsys::kTransport, GateRules{kMaxHandshakes, kHelloTimeout}) {
  setNonBlocking(listener_, true);
}

void NetConnector::dial(int rank, const NetCard& card) {
  const std::string host = netCardHost(card);
  std::vector<SocketAddress> addresses = resolveAddresses(host, card.port);
  for (int s = 0; s < settings_.socketsPerPeer; ++s) {
    Handshake h;
    h.stage = Stage::kConnecting;
    h.rank = rank;
    h.address = formatHostPort(host, card.port);
    h.deadline = deadlineAfter(std::chrono::milliseconds(settings_.timeoutMs));
    h.hello.nonce[0] = card.nonce[0];
    h.hello.nonce[1] = card.nonce[1];
    h.hello.fromRank = myRank_;
    h.hello.socketIndex = s;
    h.hello.socketsPerPeer = settings_.socketsPerPeer;
    h.hello.depth = settings_.netFifoDepth;
    h.hello.slotBytes = settings_.slotBytes;
    fillRandom(h.hello.diallerNonce, sizeof(h.hello.diallerNonce), "the socket transport's hello");
    const SocketAddress& to = addresses.at(0);
    h.fd.reset(socket(to.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    COLL_SYSCHECK(h.fd.get(), "socket() for a connection to a peer");
    // Non-blocking: the kernel completes it into the peer's backlog without the peer's help.
    if (connect(h.fd.get(), reinterpret_cast<const sockaddr*>(&to.storage), to.length) != 0 && errno != EINPROGRESS)
      h.stage = Stage::kConnecting;  // the error shows in SO_ERROR below, reported by pump()
    handshakes_.push_back(std::move(h));
  }
}

void NetConnector::acceptNew() {
  gate_.acceptPending(
      listener_,
      [this](Fd& fd, const SocketAddress&) -> std::optional<ListenerGate::Key> {
        Handshake h;
        h.stage = Stage::kRecvHello;
        h.rank = -1;
        h.fd = std::move(fd);
        h.key = nextKey_++;
        handshakes_.push_back(std::move(h));
        return handshakes_.back().key;
      },
      dropUnproven_);
}

void NetConnector::dropAccepted(ListenerGate::Key key) {
  for (size_t i = 0; i < handshakes_.size(); ++i) {
    if (handshakes_[i].key != key) continue;
    handshakes_.erase(handshakes_.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
}

void NetConnector::pump(std::vector<Established>* done, std::vector<Failure>* failed) {
  gate_.dropExpired(dropUnproven_);
  acceptNew();
  for (size_t i = 0; i < handshakes_.size();) {
    Handshake& h = handshakes_[i];
    const bool dialled = isDial(h.stage);
    const std::pair<Stage, size_t> before{h.stage, h.moved};
    bool complete = false;
    std::string error = advance(h, &complete);
    if (!dialled && before != std::make_pair(h.stage, h.moved)) gate_.heardFrom(h.key);
    // An accepted connection's time limit is the gate's (dropExpired).
    if (error.empty() && !complete && dialled && Clock::now() >= h.deadline)
      error = "the handshake did not finish in time";
    if (error.empty() && !complete) {
      ++i;
      continue;
    }
    if (!error.empty() && dialled) {
      failed->push_back(
          {h.rank, formatString("connecting to its listener at %s: %s", h.address.c_str(), error.c_str())});
    } else if (!error.empty()) {
      gate_.forget(h.key);
      gate_.warn("refused a connection: " + error);
    } else {
      if (!dialled) gate_.proven(h.key);
      done->push_back({h.rank, h.hello.socketIndex, std::move(h.fd)});
    }
    handshakes_.erase(handshakes_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

std::string NetConnector::advance(Handshake& h, bool* complete) {
  // Several messages may go in one call when the sockets allow.
  for (;;) {
    bool progressed = false;
    std::string error =
        isDial(h.stage) ? advanceDial(h, complete, &progressed) : advanceAccept(h, complete, &progressed);
    if (!error.empty() || *complete || !progressed) return error;
  }
}

std::string NetConnector::advanceDial(Handshake& h, bool* complete, bool* progressed) {
  std::string error;
  switch (h.stage) {
    case Stage::kConnecting: {
      pollfd pfd{h.fd.get(), POLLOUT, 0};
      if (poll(&pfd, 1, 0) <= 0) return "";
      int err = 0;
      socklen_t len = sizeof(err);
      if (getsockopt(h.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      // The listener exists from setup until the peer destroys its communicator: a refusal means
      // the peer is gone.
      if (err != 0) return formatString("%s (did the rank exit?)", strerror(err));
      setNoDelay(h.fd.get());
      h.stage = Stage::kSendHello;
      *progressed = true;
      return "";
    }
    case Stage::kSendHello: {
      Io io = moveBytes(h.fd.get(), true, &h.hello, sizeof(h.hello), &h.moved, &error);
      if (io == Io::kDone) h.stage = Stage::kRecvChallenge;
      *progressed = io == Io::kDone;
      return error;
    }
    case Stage::kRecvChallenge: {
      Io io = moveBytes(h.fd.get(), false, &h.challenge, sizeof(h.challenge), &h.moved, &error);
      if (io != Io::kDone)
        return io == Io::kClosed ? "the listener " + error +
                                       " (it refused this hello, or closed the connection to make room: its "
                                       "log says which)"
                                 : "";
      // The listener proves the secret first: a listener that does not know it learns nothing.
      if (!netProofMatches(key_, NetRole::kListener, h.hello, h.challenge.listenerNonce, h.challenge.listenerProof))
        return "the listener does not prove this job's secret (another job on that address?)";
      writeNetProof(key_, NetRole::kDialler, h.hello, h.challenge.listenerNonce, h.proof.diallerProof);
      h.stage = Stage::kSendProof;
      *progressed = true;
      return "";
    }
    case Stage::kSendProof: {
      Io io = moveBytes(h.fd.get(), true, &h.proof, sizeof(h.proof), &h.moved, &error);
      *complete = io == Io::kDone;
      return error;
    }
    default:
      return "internal: a dial in an accept stage";
  }
}

std::string NetConnector::advanceAccept(Handshake& h, bool* complete, bool* progressed) {
  std::string error;
  switch (h.stage) {
    case Stage::kRecvHello: {
      Io io = moveBytes(h.fd.get(), false, &h.hello, sizeof(h.hello), &h.moved, &error);
      if (io != Io::kDone) return error;
      std::string bad =
          checkNetHello(h.hello, nonce_, settings_.socketsPerPeer, settings_.netFifoDepth, settings_.slotBytes);
      if (!bad.empty()) return bad;
      if (!mayDialHere_(h.hello.fromRank))
        return formatString("rank %d is not expected to connect here", h.hello.fromRank);
      h.rank = h.hello.fromRank;
      fillRandom(h.challenge.listenerNonce, sizeof(h.challenge.listenerNonce), "the socket transport's challenge");
      writeNetProof(key_, NetRole::kListener, h.hello, h.challenge.listenerNonce, h.challenge.listenerProof);
      h.stage = Stage::kSendChallenge;
      *progressed = true;
      return "";
    }
    case Stage::kSendChallenge: {
      Io io = moveBytes(h.fd.get(), true, &h.challenge, sizeof(h.challenge), &h.moved, &error);
      if (io == Io::kDone) h.stage = Stage::kRecvProof;
      *progressed = io == Io::kDone;
      return error;
    }
    case Stage::kRecvProof: {
      Io io = moveBytes(h.fd.get(), false, &h.proof, sizeof(h.proof), &h.moved, &error);
      if (io != Io::kDone) return error;
      if (!netProofMatches(key_, NetRole::kDialler, h.hello, h.challenge.listenerNonce, h.proof.diallerProof))
        return formatString("a connection claiming to be rank %d does not prove this job's secret", h.rank);
      setNoDelay(h.fd.get());
      *complete = true;
      return "";
    }
    default:
      return "internal: an accept in a dial stage";
  }
}

void NetConnector::addPollFds(std::vector<pollfd>* fds) const {
  fds->push_back({gate_.listenerToPoll(listener_), POLLIN, 0});
  for (const Handshake& h : handshakes_) {
    short events = (h.stage == Stage::kConnecting || h.stage == Stage::kSendHello || h.stage == Stage::kSendProof ||
                    h.stage == Stage::kSendChallenge)
                       ? POLLOUT
                       : POLLIN;
    fds->push_back({h.fd.get(), events, 0});
  }
}

}  // namespace transport
}  // namespace coll
