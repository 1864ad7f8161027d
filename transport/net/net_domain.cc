#include "transport/net/net_domain.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/logging.h"
#include "common/hmac.h"
#include "common/random.h"
#include "common/socket.h"

namespace coll {
namespace transport {
namespace {

constexpr int kPollIntervalMs = 100;                       // the progress thread re-checks stop_ this often
constexpr auto kHelloTimeout = std::chrono::seconds(5);    // a connection must say who it is by then
// How often setup looks whether a rank left the job while this one waits for its connections.
constexpr auto kSetupWatchInterval = std::chrono::milliseconds(500);
// Connections read side by side while their hellos arrive; beyond this, new ones are refused at
// once (a flood of silent connections then costs a warning each, not the peers' time).
constexpr size_t kMaxPendingHellos = 1024;
constexpr auto kGoodbyeTimeout = std::chrono::seconds(2);  // closing frames are tiny; do not wait long

void tuneSocket(int fd) {
  setNoDelay(fd);
  setNonBlocking(fd, true);
  int one = 1;
  // Notices a silent peer host between collectives too (a wait inside one has its own deadline).
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
}

}  // namespace

NetDomain::NetDomain(const DomainArgs& args)
    : myRank_(args.rank),
      peerInfo_(*args.peers),
      settings_(*args.settings),
      members_(args.members),
      setupWatch_(args.setupWatch),
      nextSetupWatch_(args.setupWatch ? Deadline{} : Deadline::max()),
      peerIndex_(args.nranks, -1) {
  fillRandom(nonce_, sizeof(nonce_), "the socket transport's nonce");
  connectionKey_ = netConnectionKey(settings_.jobSecret);
  wakeFd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  COLL_SYSCHECK(wakeFd_.get(), "eventfd() for the socket progress thread");
}

NetDomain::~NetDomain() {
  try {
    if (!failed_.load()) flushAndSayGoodbye();
  } catch (const std::exception& e) {
    // A peer that vanished while we said goodbye changes nothing for this rank any more.
    COLL_INFO(kTransport, "rank %d: closing the socket transport: %s", myRank_, e.what());
  }
  stop_.store(true);
  wakeProgress();
  if (progress_.joinable()) progress_.join();
}

std::string NetDomain::card(int) {
  if (members_.empty()) return "";
  listener_ = listenOn(chooseListenAddress(peerInfo_, myRank_, settings_), 0);
  const SocketAddress bound = localAddressOf(listener_.get());
  listenAddress_ = bound.toString();
  NetCard card = makeNetCard(bound.host(), bound.port(), nonce_);
  COLL_INFO(kTransport, "rank %d: socket transport listens on %s", myRank_, listenAddress_.c_str());
  return std::string(reinterpret_cast<const char*>(&card), sizeof(card));
}

void NetDomain::connect(int, const std::vector<std::string>& cards, Deadline deadline) {
  int expected = 0;
  for (int rank : members_) {
    auto peer = std::make_unique<Peer>();
    peer->rank = rank;
    // The lower rank of a pair only accepts; it reads the dialler's card just for messages.
    if (rank < myRank_ || !cards.at(rank).empty()) peer->card = parseNetCard(cards.at(rank), rank);
    peer->sockets.resize(settings_.socketsPerPeer);
    peerIndex_[rank] = static_cast<int>(peers_.size());
    peers_.push_back(std::move(peer));
  }
  // Each pair connects once: the higher rank dials the lower, which only accepts. Dialling first
  // cannot deadlock: the kernel completes a connect into the listener's backlog without accept().
  for (auto& peer : peers_) {
    if (peer->rank > myRank_) {
      expected += settings_.socketsPerPeer;
      continue;
    }
    for (int s = 0; s < settings_.socketsPerPeer; ++s) {
      std::string name = formatString("rank %d's socket listener", peer->rank);
      // A refused connection is retried until the deadline (the peer may not listen yet), unless
      // the peer is known to have left.
      Fd fd = connectWithDeadline(netCardHost(peer->card), peer->card.port, deadline, name.c_str(),
                                  [this] { watchSetup(); });
      dial(*peer, s, fd, deadline);
      tuneSocket(fd.get());
      peer->sockets[s] = std::move(fd);
    }
  }
  acceptPeers(expected, deadline);
  listener_.reset();  // nobody else may join this communicator
  startChannels();
}

void NetDomain::dial(const Peer& peer, int socketIndex, const Fd& fd, Deadline deadline) {
  NetHello hello;
  hello.nonce[0] = peer.card.nonce[0];
  hello.nonce[1] = peer.card.nonce[1];
  hello.fromRank = myRank_;
  hello.socketIndex = socketIndex;
  hello.socketsPerPeer = settings_.socketsPerPeer;
  hello.depth = settings_.netFifoDepth;
  hello.slotBytes = settings_.slotBytes;
  fillRandom(hello.diallerNonce, sizeof(hello.diallerNonce), "the socket transport's hello");
  NetChallenge challenge;
  if (sendAll(fd.get(), &hello, sizeof(hello), deadline) != IoStatus::kOk ||
      recvAll(fd.get(), &challenge, sizeof(challenge), deadline) != IoStatus::kOk)
    throwError(collRemoteError, "rank %d (%s) closed the socket connection during setup (or did not answer its hello "
               "in time)", peer.rank, peerAddress(peer.rank).c_str());
  // The listener proves the secret first: a listener that does not know it learns nothing here.
  if (!netProofMatches(connectionKey_, NetRole::kListener, hello, challenge.listenerNonce, challenge.listenerProof))
    throwError(collRemoteError, "the socket listener at %s, published as rank %d's, does not prove this job's secret "
               "(another job on that address?)", peerAddress(peer.rank).c_str(), peer.rank);
  NetProof proof;
  writeNetProof(connectionKey_, NetRole::kDialler, hello, challenge.listenerNonce, proof.diallerProof);
  if (sendAll(fd.get(), &proof, sizeof(proof), deadline) != IoStatus::kOk)
    throwError(collRemoteError, "rank %d (%s) closed the socket connection during setup", peer.rank,
               peerAddress(peer.rank).c_str());
}

void NetDomain::watchSetup() {
  const Deadline now = Clock::now();
  if (now < nextSetupWatch_) return;
  nextSetupWatch_ = now + kSetupWatchInterval;
  setupWatch_();
}

void NetDomain::acceptPeers(int expected, Deadline deadline) {
  // Connections are taken as they come and their handshakes run side by side: one that says
  // nothing costs only its own slot until its deadline, never the real peers' time.
  struct Pending {
    Fd fd;
    bool challenged = false;  // the hello was read and answered; the dialler's proof is due
    NetHello hello;
    NetChallenge challenge;
    NetProof proof;
    size_t received = 0;  // of the hello, then of the proof
    Deadline helloDeadline;
  };
  std::vector<Pending> pending;
  std::vector<pollfd> fds;
  auto refuse = [&](const std::string& why) {
    COLL_WARN(kTransport, "rank %d: refused a connection on %s: %s", myRank_, listenAddress_.c_str(), why.c_str());
  };
  while (expected > 0) {
    const Deadline now = Clock::now();
    if (now >= deadline) {
      std::string missing;
      for (auto& peer : peers_)
        for (auto& s : peer->sockets)
          if (peer->rank > myRank_ && !s.valid()) {
            missing += (missing.empty() ? "" : ", ") + std::to_string(peer->rank);
            break;
          }
      throwError(collTimeout, "socket transport setup: rank %d waited in vain for connections from rank(s) %s on %s",
                 myRank_, missing.c_str(), listenAddress_.c_str());
    }
    watchSetup();
    Deadline wake = std::min(deadline, nextSetupWatch_);
    fds.clear();
    fds.push_back({listener_.get(), POLLIN, 0});
    for (const Pending& p : pending) {
      fds.push_back({p.fd.get(), POLLIN, 0});
      wake = std::min(wake, p.helloDeadline);
    }
    int ready = poll(fds.data(), fds.size(), pollTimeoutMs(wake));
    if (ready < 0 && errno == EINTR) continue;
    COLL_SYSCHECK(ready, "poll() on the socket transport's listener");
    // Read what the pending connections sent; settle those whose handshake is done, late or broken.
    for (size_t i = 0; i < pending.size();) {
      Pending& p = pending[i];
      const short revents = fds[i + 1].revents;
      char* into = p.challenged ? reinterpret_cast<char*>(&p.proof) : reinterpret_cast<char*>(&p.hello);
      const size_t want = p.challenged ? sizeof(p.proof) : sizeof(p.hello);
      std::string refusal;
      bool done = false;
      if (revents != 0) {
        ssize_t n = recv(p.fd.get(), into + p.received, want - p.received, 0);
        if (n > 0) {
          p.received += static_cast<size_t>(n);
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          refusal = "closed before its handshake was complete";
        }
      }
      if (refusal.empty() && !p.challenged && p.received == want) {
        const NetHello& hello = p.hello;
        refusal = checkNetHello(hello, nonce_, settings_.socketsPerPeer, settings_.netFifoDepth, settings_.slotBytes);
        if (refusal.empty() && (!connects(hello.fromRank) || hello.fromRank <= myRank_))
          refusal = formatString("rank %d is not expected to connect here", hello.fromRank);
        if (refusal.empty()) {
          fillRandom(p.challenge.listenerNonce, sizeof(p.challenge.listenerNonce), "the socket transport's challenge");
          writeNetProof(connectionKey_, NetRole::kListener, hello, p.challenge.listenerNonce,
                        p.challenge.listenerProof);
          // 64 bytes into a fresh socket's empty send buffer: all of it goes, or the peer is broken.
          if (send(p.fd.get(), &p.challenge, sizeof(p.challenge), MSG_NOSIGNAL) != sizeof(p.challenge))
            refusal = "could not send the challenge";
          p.challenged = true;
          p.received = 0;
        }
      } else if (refusal.empty() && p.challenged && p.received == want) {
        done = true;
        if (!netProofMatches(connectionKey_, NetRole::kDialler, p.hello, p.challenge.listenerNonce,
                             p.proof.diallerProof))
          refusal = formatString("a connection claiming to be rank %d does not prove this job's secret",
                                 p.hello.fromRank);
        else if (peers_[peerIndex_[p.hello.fromRank]]->sockets[p.hello.socketIndex].valid())
          refusal = formatString("rank %d connected socket %d twice", p.hello.fromRank, p.hello.socketIndex);
      }
      if (refusal.empty() && !done && Clock::now() >= p.helloDeadline)
        refusal = p.challenged ? "no proof in time" : "no hello in time";
      if (!refusal.empty()) {
        refuse(refusal);
      } else if (done) {
        tuneSocket(p.fd.get());
        peers_[peerIndex_[p.hello.fromRank]]->sockets[p.hello.socketIndex] = std::move(p.fd);
        --expected;
      } else {
        ++i;
        continue;
      }
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
      fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
    if ((fds[0].revents & POLLIN) == 0) continue;
    for (;;) {
      Fd fd(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (!fd.valid()) break;  // none left (or it went away before we took it)
      if (pending.size() >= kMaxPendingHellos) {
        refuse(formatString("%zu connections are already waiting to say hello", pending.size()));
        continue;
      }
      Pending fresh;
      fresh.fd = std::move(fd);
      fresh.helloDeadline = std::min(deadline, Clock::now() + kHelloTimeout);
      pending.push_back(std::move(fresh));
    }
  }
}

void NetDomain::startChannels() {
  for (auto& peer : peers_) {
    std::vector<int> fds;
    for (auto& s : peer->sockets) fds.push_back(s.get());
    peer->send =
        std::make_unique<NetSendConnection>(peer->rank, fds, settings_.netFifoDepth, settings_.slotBytes, *this);
    peer->recv =
        std::make_unique<NetRecvConnection>(peer->rank, fds, settings_.netFifoDepth, settings_.slotBytes, *this);
  }
}

void NetDomain::useDoorbell(Doorbell* bell) {
  bell_ = bell;
  if (!peers_.empty() && !progress_.joinable()) progress_ = std::thread([this] { progressLoop(); });
}

SendConnection* NetDomain::sendConnection(int peer) {
  if (!connects(peer)) throwError(collInternalError, "socket transport: no connection to rank %d", peer);
  return peers_[peerIndex_[peer]]->send.get();
}

RecvConnection* NetDomain::recvConnection(int peer) {
  if (!connects(peer)) throwError(collInternalError, "socket transport: no connection to rank %d", peer);
  return peers_[peerIndex_[peer]]->recv.get();
}

std::string NetDomain::peerAddress(int peer) const {
  if (!connects(peer)) return "?";
  const NetCard& card = peers_[peerIndex_[peer]]->card;
  if (card.family == 0) return "a peer that published no address";
  return formatHostPort(netCardHost(card), card.port);
}

void NetDomain::checkPeers() const {
  if (!failed_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(failureMutex_);
  throwError(collRemoteError, "%s", failure_.c_str());
}

DomainUsage NetDomain::usage() const {
  DomainUsage usage;
  usage.resourceKind = "sockets";
  for (const auto& peer : peers_) {
    if (!peer->send) continue;
    usage.sendPeers.push_back(peer->rank);
    usage.recvPeers.push_back(peer->rank);
    for (const Fd& s : peer->sockets) usage.resources += s.valid() ? 1 : 0;
  }
  return usage;
}

void NetDomain::channelFailed(int peer, const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(failureMutex_);
    if (failed_.load()) return;
    failure_ = formatString("socket connection to rank %d (%s): %s", peer, peerAddress(peer).c_str(), reason.c_str());
    failed_.store(true, std::memory_order_release);
  }
  if (bell_ != nullptr) forceRingDoorbell(bell_);
}

void NetDomain::announceFailure(const std::string&) {
  {
    std::lock_guard<std::mutex> lock(failureMutex_);
    if (!failed_.load()) failure_ = "this rank's communicator failed";
    failed_.store(true);
  }
  for (auto& peer : peers_)
    for (auto& s : peer->sockets)
      if (s.valid()) shutdown(s.get(), SHUT_RDWR);
}

void NetDomain::wakeProgress() {
  if (!sleeping_.load(std::memory_order_seq_cst) && !stop_.load()) return;
  uint64_t one = 1;
  ssize_t ignored = write(wakeFd_.get(), &one, sizeof(one));
  (void)ignored;
}

void NetDomain::progressOnce() {
  if (pumpAll()) ringDoorbell(bell_);  // the executor only pumps after useDoorbell()
}

void NetDomain::executorState(Executor state) {
  executorDriving_.store(state == Executor::kDriving, std::memory_order_seq_cst);
  if (state == Executor::kDriving) return;
  bool sendsQueued = false;
  for (auto& peer : peers_) sendsQueued = sendsQueued || !peer->send->drained();
  // Asleep: someone must watch the sockets and ring the doorbell. Returned: only queued sends
  // need the thread; data for the next call can wait in the kernel until that call reads it.
  if (state == Executor::kAsleep || sendsQueued) wakeProgress();
}

bool NetDomain::pumpAll(std::vector<short>* events) {
  bool moved = false;
  if (events != nullptr) events->assign(peers_.size() * settings_.socketsPerPeer, 0);
  for (size_t p = 0; p < peers_.size(); ++p) {
    Peer& peer = *peers_[p];
    // When the executor holds a channel it is pumping it itself; count that as activity so the
    // thread looks again instead of sleeping on work it did not see.
    if (peer.send->mutex().try_lock()) {
      moved = peer.send->pump().moved || moved;
      // What to poll for is read here, under the lock: the executor's pumps change it.
      for (int s = 0; events != nullptr && s < settings_.socketsPerPeer; ++s)
        (*events)[p * settings_.socketsPerPeer + s] |= peer.send->wantsWrite(s) ? POLLOUT : 0;
      peer.send->mutex().unlock();
    } else {
      moved = true;
    }
    if (peer.recv->mutex().try_lock()) {
      moved = peer.recv->pump().moved || moved;
      for (int s = 0; events != nullptr && s < settings_.socketsPerPeer; ++s)
        (*events)[p * settings_.socketsPerPeer + s] |= peer.recv->wantsRead(s) ? POLLIN : 0;
      peer.recv->mutex().unlock();
    } else {
      moved = true;
    }
  }
  return moved;
}

void NetDomain::progressLoop() {
  std::vector<pollfd> fds;
  std::vector<short> events;     // per socket: what to poll it for
  std::vector<uint8_t> hungUp;  // per socket: the peer closed it and nothing more can be read now
  size_t socketCount = peers_.size() * settings_.socketsPerPeer;
  hungUp.assign(socketCount, 0);
  while (!stop_.load() && !failed_.load()) {
    if (executorDriving_.load(std::memory_order_seq_cst)) {
      // The executor moves the bytes; wait until it hands them back (or the domain closes).
      sleeping_.store(true, std::memory_order_seq_cst);
      if (executorDriving_.load(std::memory_order_seq_cst) && !stop_.load()) {
        pollfd wake{wakeFd_.get(), POLLIN, 0};
        poll(&wake, 1, kPollIntervalMs);
        uint64_t drained;
        if (wake.revents & POLLIN) {
          ssize_t ignored = read(wakeFd_.get(), &drained, sizeof(drained));
          (void)ignored;
        }
      }
      sleeping_.store(false);
      continue;
    }
    if (pumpAll()) {
      ringDoorbell(bell_);
      continue;
    }
    // Announce sleep, then look once more: a post or release that happened before the
    // announcement is seen here, one after it writes the eventfd (wakeProgress).
    sleeping_.store(true, std::memory_order_seq_cst);
    if (pumpAll(&events)) {
      sleeping_.store(false);
      ringDoorbell(bell_);
      continue;
    }
    fds.clear();
    fds.push_back({wakeFd_.get(), POLLIN, 0});
    for (size_t p = 0; p < peers_.size(); ++p) {
      for (int s = 0; s < settings_.socketsPerPeer; ++s) {
        size_t index = p * settings_.socketsPerPeer + s;
        // poll() reports a hang-up even for no events: leave such a socket out until it has
        // something to do, or the thread would spin on it.
        bool quiet = events[index] == 0 && (hungUp[index] || peers_[p]->recv->departed());
        fds.push_back({quiet ? -1 : peers_[p]->sockets[s].get(), events[index], 0});
      }
    }
    int ready = poll(fds.data(), fds.size(), kPollIntervalMs);
    sleeping_.store(false);
    if (ready < 0 && errno != EINTR) {
      channelFailed(peers_[0]->rank, formatString("poll() failed: %s", strerror(errno)));
      break;
    }
    uint64_t drained;
    if (fds[0].revents & POLLIN) {
      ssize_t ignored = read(wakeFd_.get(), &drained, sizeof(drained));
      (void)ignored;
    }
    for (size_t i = 1; i < fds.size(); ++i)
      if ((fds[i].revents & (POLLHUP | POLLERR)) && !(fds[i].events & POLLIN)) hungUp[i - 1] = 1;
  }
  ringDoorbell(bell_);
}

void NetDomain::flushAndSayGoodbye() {
  // Sends the executor posted are still ours to deliver: the collective that posted them has
  // returned. Let the progress thread finish them, then send each socket its closing frame.
  if (!progress_.joinable()) return;  // setup never finished: nothing was sent
  Deadline deadline = deadlineAfter(std::chrono::milliseconds(settings_.timeoutMs));
  for (auto& peer : peers_) {
    while (!peer->send->drained() && !failed_.load() && Clock::now() < deadline) {
      wakeProgress();
      usleep(100);
    }
  }
  stop_.store(true);
  wakeProgress();
  if (progress_.joinable()) progress_.join();
  if (failed_.load()) return;
  Deadline byeDeadline = std::min(deadline, Clock::now() + kGoodbyeTimeout);
  for (auto& peer : peers_) {
    for (int s = 0; s < settings_.socketsPerPeer; ++s) {
      NetFrameHeader bye;
      bye.kind = kNetFrameBye;
      bye.seq = static_cast<uint32_t>(peer->send->nextSeq(s));
      bye.bytes = 0;
      // A peer that already left resets the connection; that is fine at this point.
      if (sendAll(peer->sockets[s].get(), &bye, sizeof(bye), byeDeadline) == IoStatus::kOk)
        shutdown(peer->sockets[s].get(), SHUT_WR);
    }
  }
}

std::unique_ptr<Domain> makeNetDomain(const DomainArgs& args) { return std::make_unique<NetDomain>(args); }

}  // namespace transport
}  // namespace coll
