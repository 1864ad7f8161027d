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
#include "common/hmac.h"
#include "common/logging.h"
#include "common/random.h"
#include "common/socket.h"
#include "topo/sysfs_read.h"

namespace coll {
namespace transport {
namespace {

constexpr int kPollIntervalMs = 100;  // the progress thread re-checks stop_ this often
// How often a rank whose connection waits for a peer's dial asks whether a rank left the job.
constexpr auto kPeerWatchInterval = std::chrono::milliseconds(500);
constexpr auto kGoodbyeTimeout = std::chrono::seconds(2);  // closing frames are tiny; do not wait long

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// bufferBytes: fixed send and receive buffers, or 0 for the kernel's autotuning.
void tuneSocket(int fd, size_t bufferBytes) {
  setNoDelay(fd);
  setNonBlocking(fd, true);
  int one = 1;
  // Notices a silent peer host between collectives too (a wait inside one has its own deadline).
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  if (bufferBytes > 0 && !setSocketBuffers(fd, bufferBytes))
    COLL_INFO(kTransport, "setsockopt(SO_SNDBUF/SO_RCVBUF, %zu) refused: %s; this socket's buffers stay autotuned",
              bufferBytes, strerror(errno));
}

}  // namespace

bool kernelAllowsSocketBuffers(size_t bytes) {
  const long want = static_cast<long>(bytes);
  return topo::readNumber("/proc/sys/net/core/wmem_max", -1) >= want &&
         topo::readNumber("/proc/sys/net/core/rmem_max", -1) >= want;
}

NetDomain::NetDomain(const DomainArgs& args)
    : myRank_(args.rank),
      peerInfo_(*args.peers),
      settings_(*args.settings),
      members_(args.members),
      setupWatch_(args.setupWatch),
      peerIndex_(args.nranks, -1) {
  fillRandom(nonce_, sizeof(nonce_), "the socket transport's nonce");
  if (settings_.netEncrypt) requireSecretForEncryption(settings_.jobSecret, "the socket transport");
  connectionKey_ = netConnectionKey(settings_.jobSecret);
  wakeFd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  COLL_SYSCHECK(wakeFd_.get(), "eventfd() for the socket progress thread");
  // Buffers that hold a few whole frames: a sender queues a 512 KiB frame in one sendmsg instead
  // of waiting, frame by frame, for the autotuned buffer to grow or drain (2 ranks over loopback,
  // measured faster at 1 MiB; docs/performance.md, "Defaults, and the measurement behind each").
  if (settings_.socketBufferBytes > 0 && kernelAllowsSocketBuffers(settings_.socketBufferBytes)) {
    bufferBytes_ = settings_.socketBufferBytes;
  } else if (settings_.socketBufferBytes > 0) {
    COLL_INFO(kTransport,
              "rank %d: COLL_SOCKET_BUFFER_BYTES %zu is above net.core.wmem_max or rmem_max: socket buffers stay "
              "autotuned",
              myRank_, settings_.socketBufferBytes);
  }
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
  COLL_INFO(kTransport, "rank %d: socket transport listens on %s%s", myRank_, listenAddress_.c_str(),
            settings_.netEncrypt ? " (frames encrypted: COLL_NET_ENCRYPT=1)" : "");
  return std::string(reinterpret_cast<const char*>(&card), sizeof(card));
}

void NetDomain::connect(int, const std::vector<std::string>& cards, Deadline) {
  if (members_.empty()) return;
  for (int rank : members_) {
    auto peer = std::make_unique<Peer>();
    peer->rank = rank;
    // The lower rank of a pair only accepts; it reads the dialler's card just for messages.
    if (rank < myRank_ || !cards.at(rank).empty()) peer->card = parseNetCard(cards.at(rank), rank);
    peer->sockets.resize(settings_.socketsPerPeer);
    peer->ciphers.resize(settings_.socketsPerPeer);
    const bool sameHost = peerInfo_.at(rank).hostHash == peerInfo_.at(myRank_).hostHash;
    peer->sendSockets = netSocketsCarrying(myRank_, rank, settings_.socketsPerPeer, sameHost);
    peer->recvSockets = netSocketsCarrying(rank, myRank_, settings_.socketsPerPeer, sameHost);
    peerIndex_[rank] = static_cast<int>(peers_.size());
    peers_.push_back(std::move(peer));
  }
  active_.assign(peers_.size(), nullptr);
  connector_ = std::make_unique<NetConnector>(myRank_, settings_, connectionKey_, nonce_, listener_.get(),
                                              [this](int rank) { return connects(rank) && rank > myRank_; });
}

void NetDomain::useDoorbell(Doorbell* bell) {
  bell_ = bell;
  if (!peers_.empty() && !progress_.joinable()) progress_ = std::thread([this] { progressLoop(); });
}

NetDomain::Peer& NetDomain::peerFor(int rank) {
  if (!connects(rank)) throwError(collInternalError, "socket transport: no connection to rank %d", rank);
  return *peers_[peerIndex_[rank]];
}

void NetDomain::activate(Peer& peer) {
  {
    std::lock_guard<std::mutex> lock(activeMutex_);
    if (peer.active.load()) return;
    const int depth = settings_.netFifoDepth;
    peer.send = std::make_unique<NetSendConnection>(peer.rank, std::vector<int>(peer.sendSockets.size(), -1), depth,
                                                    settings_.slotBytes, *this);
    peer.recv = std::make_unique<NetRecvConnection>(peer.rank, std::vector<int>(peer.recvSockets.size(), -1), depth,
                                                    settings_.slotBytes, *this);
    if (peer.rank < myRank_) dialQueue_.push_back(peer.rank);
    unattached_.fetch_add(1);
    const size_t n = activeCount_.load(std::memory_order_relaxed);
    active_[n] = &peer;
    activeCount_.store(n + 1, std::memory_order_release);
    peer.active.store(true, std::memory_order_release);
  }
  COLL_TRACE(kTransport, "rank %d: socket connection to rank %d made (%s)", myRank_, peer.rank,
             peer.rank < myRank_ ? "dialling" : "waiting for its dial");
  wakeProgress();
}

// Never waits for the peer (transport/domain.h): the connection exists at once and its sockets
// follow when the handshakes complete.
SendConnection* NetDomain::sendConnection(int peer) {
  Peer& p = peerFor(peer);
  if (!p.active.load(std::memory_order_acquire)) activate(p);
  p.sendAsked.store(true, std::memory_order_relaxed);
  return p.send.get();
}

RecvConnection* NetDomain::recvConnection(int peer) {
  Peer& p = peerFor(peer);
  if (!p.active.load(std::memory_order_acquire)) activate(p);
  p.recvAsked.store(true, std::memory_order_relaxed);
  return p.recv.get();
}

bool NetDomain::pumpConnector() {
  if (!connector_ || !connectorMutex_.try_lock()) return false;
  std::lock_guard<std::mutex> lock(connectorMutex_, std::adopt_lock);
  std::vector<int> dials;
  {
    std::lock_guard<std::mutex> queue(activeMutex_);
    dials.swap(dialQueue_);
  }
  for (int rank : dials) {
    try {
      connector_->dial(rank, peers_[peerIndex_[rank]]->card);
    } catch (const CollError& e) {
      channelFailed(rank, e.what());
    }
  }
  std::vector<NetConnector::Established> done;
  std::vector<NetConnector::Failure> failures;
  connector_->pump(&done, &failures);
  connectorBusy_.store(connector_->busy());
  for (const auto& f : failures) channelFailed(f.rank, f.reason);
  for (auto& e : done) {
    Peer& peer = *peers_[peerIndex_[e.rank]];
    if (!peer.active.load(std::memory_order_acquire)) activate(peer);
    if (peer.sockets[e.socketIndex].valid()) {
      COLL_WARN(kTransport, "rank %d: refused a connection: rank %d connected socket %d twice", myRank_, e.rank,
                e.socketIndex);
      continue;
    }
    tuneSocket(e.fd.get(), bufferBytes_);
    peer.sockets[e.socketIndex] = std::move(e.fd);
    peer.ciphers[e.socketIndex] = std::move(e.ciphers);
    if (++peer.connected < settings_.socketsPerPeer) continue;
    auto fdsOf = [&peer](const std::vector<int>& indices) {
      std::vector<int> fds;
      for (int s : indices) fds.push_back(peer.sockets[s].get());
      return fds;
    };
    // Each socket's sealing cipher goes with the frames it sends, its opening one with those it
    // receives (none without COLL_NET_ENCRYPT).
    auto ciphersOf = [&peer](const std::vector<int>& indices, std::unique_ptr<RecordCipher> RecordCiphers::*which) {
      std::vector<std::unique_ptr<RecordCipher>> ciphers;
      for (int s : indices)
        if (peer.ciphers[s].*which) ciphers.push_back(std::move(peer.ciphers[s].*which));
      return ciphers;
    };
    {
      std::lock_guard<std::mutex> sendLock(peer.send->mutex());
      peer.send->attach(fdsOf(peer.sendSockets), ciphersOf(peer.sendSockets, &RecordCiphers::seal));
    }
    {
      std::lock_guard<std::mutex> recvLock(peer.recv->mutex());
      peer.recv->attach(fdsOf(peer.recvSockets), ciphersOf(peer.recvSockets, &RecordCiphers::open));
    }
    unattached_.fetch_sub(1);
    COLL_TRACE(kTransport, "rank %d: %d socket(s) to rank %d connected", myRank_, settings_.socketsPerPeer, e.rank);
  }
  return !done.empty();
}

std::string NetDomain::peerAddress(int peer) const {
  if (!connects(peer)) return "?";
  const NetCard& card = peers_[peerIndex_[peer]]->card;
  if (card.family == 0) return "a peer that published no address";
  return formatHostPort(netCardHost(card), card.port);
}

void NetDomain::checkPeers() const {
  if (failed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(failureMutex_);
    throwError(collRemoteError, "%s", failure_.c_str());
  }
  // A connection that waits for a peer's dial waits in vain if that peer left the job: its death
  // shows nowhere else (no socket to close), so ask the store now and then (it throws if so).
  if (!setupWatch_ || unattached_.load() == 0) return;
  int64_t now = nowNs(), next = nextWatchNs_.load();
  if (now < next) return;
  if (!nextWatchNs_.compare_exchange_strong(
          next, now + std::chrono::duration_cast<std::chrono::nanoseconds>(kPeerWatchInterval).count()))
    return;
  std::vector<int> awaited;
  const size_t active = activeCount_.load(std::memory_order_acquire);
  for (size_t i = 0; i < active; ++i)
    if (!active_[i]->recv->attached()) awaited.push_back(active_[i]->rank);
  if (!awaited.empty()) setupWatch_(awaited);
}

DomainUsage NetDomain::usage() const {
  DomainUsage usage;
  usage.resourceKind = "sockets";
  uint64_t inPlace = 0;
  std::lock_guard<std::mutex> lock(connectorMutex_);
  for (const auto& peer : peers_) {
    if (!peer->active.load()) continue;
    if (peer->sendAsked.load()) usage.sendPeers.push_back(peer->rank);
    if (peer->recvAsked.load()) usage.recvPeers.push_back(peer->rank);
    if (peer->recv) inPlace += peer->recv->receivedInPlace();
    usage.resources += peer->connected;
  }
  usage.counts.push_back({kReceivedInPlace, inPlace});
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
  std::lock_guard<std::mutex> lock(connectorMutex_);
  for (auto& peer : peers_)
    for (auto& s : peer->sockets)
      if (s.valid()) shutdown(s.get(), SHUT_RDWR);
}

void NetDomain::wakeProgress() {
  if (!sleeping_.load(std::memory_order_seq_cst) && !stop_.load()) return;
  // While the executor drives, the thread has nothing to do until it is handed the sockets back
  // (executorState wakes it then): a wake now would only preempt the executor on its own core
  // for a thread that goes back to sleep.
  if (executorDriving_.load(std::memory_order_seq_cst) && !stop_.load()) return;
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
  const size_t n = activeCount_.load(std::memory_order_acquire);
  for (size_t p = 0; p < n; ++p) sendsQueued = sendsQueued || !active_[p]->send->drained();
  // Asleep: someone must watch the sockets and ring the doorbell. Returned: only queued sends
  // need the thread; data for the next call can wait in the kernel until that call reads it.
  if (state == Executor::kAsleep || sendsQueued) wakeProgress();
}

bool NetDomain::pumpAll(std::vector<short>* events, bool always) {
  bool moved = false;
  if (always || unattached_.load() > 0 || connectorBusy_.load()) moved = pumpConnector();
  const size_t n = activeCount_.load(std::memory_order_acquire);
  if (events != nullptr) events->assign(n * settings_.socketsPerPeer, 0);
  for (size_t p = 0; p < n; ++p) {
    Peer& peer = *active_[p];
    // When the executor holds a channel it is pumping it itself; count that as activity so the
    // thread looks again instead of sleeping on work it did not see.
    if (peer.send->mutex().try_lock()) {
      moved = peer.send->pump().moved || moved;
      // What to poll for is read here, under the lock: the executor's pumps change it.
      for (size_t i = 0; events != nullptr && i < peer.sendSockets.size(); ++i)
        (*events)[p * settings_.socketsPerPeer + peer.sendSockets[i]] |=
            peer.send->wantsWrite(static_cast<int>(i)) ? POLLOUT : 0;
      peer.send->mutex().unlock();
    } else {
      moved = true;
    }
    if (peer.recv->mutex().try_lock()) {
      moved = peer.recv->pump().moved || moved;
      for (size_t i = 0; events != nullptr && i < peer.recvSockets.size(); ++i)
        (*events)[p * settings_.socketsPerPeer + peer.recvSockets[i]] |=
            peer.recv->wantsRead(static_cast<int>(i)) ? POLLIN : 0;
      peer.recv->mutex().unlock();
    } else {
      moved = true;
    }
  }
  return moved;
}

void NetDomain::progressLoop() {
  std::vector<pollfd> fds;
  std::vector<short> events;    // per socket of the active peers: what to poll it for
  std::vector<uint8_t> hungUp;  // per such socket: the peer closed it and nothing more can be read now
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
    if (pumpAll(nullptr, true)) {
      ringDoorbell(bell_);
      continue;
    }
    // Announce sleep, then look once more: a post or release that happened before the
    // announcement is seen here, one after it writes the eventfd (wakeProgress).
    sleeping_.store(true, std::memory_order_seq_cst);
    if (pumpAll(&events, true)) {
      sleeping_.store(false);
      ringDoorbell(bell_);
      continue;
    }
    fds.clear();
    fds.push_back({wakeFd_.get(), POLLIN, 0});
    {
      std::lock_guard<std::mutex> lock(connectorMutex_);
      if (connector_) connector_->addPollFds(&fds);
    }
    const size_t firstSocket = fds.size();
    const size_t sockets = events.size();
    hungUp.resize(sockets, 0);
    for (size_t index = 0; index < sockets; ++index) {
      Peer& peer = *active_[index / settings_.socketsPerPeer];
      const int s = static_cast<int>(index % settings_.socketsPerPeer);
      // poll() reports a hang-up even for no events: leave such a socket out until it has
      // something to do, or the thread would spin on it. Sockets not connected yet are left out.
      bool quiet = events[index] == 0 && (hungUp[index] || peer.recv->departed() || !peer.recv->attached());
      fds.push_back({quiet ? -1 : peer.sockets[s].get(), events[index], 0});
    }
    int ready = poll(fds.data(), fds.size(), kPollIntervalMs);
    sleeping_.store(false);
    if (ready < 0 && errno != EINTR) {
      channelFailed(sockets > 0 ? active_[0]->rank : myRank_, formatString("poll() failed: %s", strerror(errno)));
      break;
    }
    uint64_t drained;
    if (fds[0].revents & POLLIN) {
      ssize_t ignored = read(wakeFd_.get(), &drained, sizeof(drained));
      (void)ignored;
    }
    for (size_t i = firstSocket; i < fds.size(); ++i)
      if ((fds[i].revents & (POLLHUP | POLLERR)) && !(fds[i].events & POLLIN)) hungUp[i - firstSocket] = 1;
  }
  ringDoorbell(bell_);
}

void NetDomain::flushAndSayGoodbye() {
  // Sends the executor posted are still ours to deliver: the collective that posted them has
  // returned. Let the progress thread finish them, then send each socket its closing frame.
  if (!progress_.joinable()) return;  // setup never finished: nothing was sent
  Deadline deadline = deadlineAfter(std::chrono::milliseconds(settings_.timeoutMs));
  const size_t n = activeCount_.load(std::memory_order_acquire);
  for (size_t p = 0; p < n; ++p) {
    Peer* peer = active_[p];
    // A peer that has not dialled yet gets the time it needs: its part of the call that posted
    // these sends is still to come.
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
  for (size_t p = 0; p < n; ++p) {
    Peer* peer = active_[p];
    if (!peer->send->attached()) continue;
    for (size_t i = 0; i < peer->sendSockets.size(); ++i) {
      const int s = peer->sendSockets[i];
      const std::vector<uint8_t> bye = peer->send->closingFrame(static_cast<int>(i));
      // A peer that already left resets the connection; that is fine at this point.
      if (sendAll(peer->sockets[s].get(), bye.data(), bye.size(), byeDeadline) == IoStatus::kOk)
        shutdown(peer->sockets[s].get(), SHUT_WR);
    }
  }
}

std::unique_ptr<Domain> makeNetDomain(const DomainArgs& args) { return std::make_unique<NetDomain>(args); }

}  // namespace transport
}  // namespace coll
