// TcpStoreServer: one thread, one poll() over the listening socket, an eventfd that ends the
// thread, and every client. Sockets are non-blocking and each client has its own input and
// output buffers, so a client that stops reading, sends half a frame or sends garbage only ever
// costs its own connection. What a request means is StoreService's business (store_service.h);
// this file frames bytes, enforces the limits and delivers replies.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "bootstrap/store_protocol.h"
#include "bootstrap/store_service.h"
#include "bootstrap/tcp_store.h"
#include "common/error.h"
#include "common/listener_gate.h"
#include "common/logging.h"

namespace coll {
namespace bootstrap {

namespace {

constexpr size_t kReadChunk = 64 * 1024;
constexpr int kReadChunksPerWakeup = 16;  // bounds one client's share of a loop iteration
// Stop reading requests from a client that does not read its replies: its backlog stays bounded.
constexpr size_t kOutputBackpressure = 1 << 20;
// A legitimate client sends its hello right after connecting (TcpStoreClient does so before
// anything else) and proves the secret one round trip later; one that has not within this time is
// closed (common/listener_gate.h has the rest of the rules every listener applies).
constexpr auto kHelloTimeout = std::chrono::seconds(5);

}  // namespace

class TcpStoreServer::Loop {
 public:
  Loop(Fd listenFd, int wakeFd, const Secret& secret, std::string name, const std::atomic<bool>& stopRequested,
       const std::atomic<bool>& endWhenIdle)
      : listenFd_(std::move(listenFd)),
        wakeFd_(wakeFd),
        name_(name),
        service_(secret, name),
        stopRequested_(stopRequested),
        endWhenIdle_(endWhenIdle),
        gate_("rendezvous store " + name, LogSubsys::kBootstrap, GateRules{kMaxClients, kHelloTimeout}) {}

  // Runs until the destructor asks it to stop, or, once endWhenIdle() was called, until no
  // authenticated client is left. An unexpected failure closes every connection so that clients
  // see EOF at once instead of waiting for their deadlines.
  void runGuarded() {
    try {
      run();
    } catch (const std::exception& e) {
      COLL_WARN(kBootstrap, "rendezvous store %s stopped: %s", name_.c_str(), e.what());
    }
    conns_.clear();
    listenFd_.reset();
  }

 private:
  struct Connection {
    uint64_t id = 0;
    Fd fd;
    std::string peer;
    bool authenticated = false;  // mirrors the service, to size the next frame without a lookup
    bool closeAfterFlush = false;
    bool dead = false;
    Bytes in;
    size_t inStart = 0;  // parsed prefix of `in`
    Bytes out;
    size_t outSent = 0;
  };

  static size_t backlog(const Connection& c) { return c.out.size() - c.outSent; }

  void run() {
    std::vector<pollfd> fds;
    std::vector<Connection*> order;
    while (true) {
      fds.clear();
      order.clear();
      fds.push_back({wakeFd_, POLLIN, 0});
      // poll() ignores a negative fd: that is how accepting pauses when no descriptor is left.
      fds.push_back({gate_.listenerToPoll(listenFd_.get()), POLLIN, 0});
      for (auto& entry : conns_) {
        Connection& c = *entry.second;
        short events = 0;
        if (!c.closeAfterFlush && backlog(c) < kOutputBackpressure) events |= POLLIN;
        if (backlog(c) > 0) events |= POLLOUT;
        fds.push_back({c.fd.get(), events, 0});
        order.push_back(&c);
      }
      int rc = poll(fds.data(), fds.size(), pollTimeoutMs(nextWakeup()));
      if (rc < 0 && errno != EINTR) throwSystemError("poll() in the rendezvous store");
      if (rc > 0 && fds[0].revents != 0) {
        if (stopRequested_.load()) return;
        uint64_t count = 0;  // endWhenIdle()'s wake-up: consume it, then check below
        ssize_t got = read(wakeFd_, &count, sizeof(count));
        (void)got;
      }
      expire(Clock::now());
      if (rc > 0 && (fds[1].revents & POLLIN) != 0) acceptClients();
      for (size_t i = 0; i < order.size(); ++i) {
        Connection& c = *order[i];
        short revents = rc > 0 ? fds[i + 2].revents : 0;
        if (!c.dead && (revents & POLLOUT) != 0) flush(c);
        if (!c.dead && (revents & (POLLIN | POLLHUP | POLLERR)) != 0) readFrom(c);
      }
      // Frames left unparsed while a client was backpressured: its backlog may have drained
      // (here or inside another client's request), and no new POLLIN would come for them.
      for (Connection* c : order) {
        if (!c->dead && c->in.size() > c->inStart) processInput(*c);
      }
      reap();
      if (endWhenIdle_.load() && authenticatedClients() == 0) {
        COLL_INFO(kBootstrap, "rendezvous store %s: its communicators are gone; stopping", name_.c_str());
        return;
      }
    }
  }

  size_t authenticatedClients() const {
    size_t count = 0;
    for (const auto& entry : conns_) count += entry.second->authenticated ? 1 : 0;
    return count;
  }

  Deadline nextWakeup() const { return std::min(service_.nextDeadline(), gate_.nextDeadline()); }

  void acceptClients() {
    gate_.acceptPending(
        listenFd_.get(),
        [this](Fd& fd, const SocketAddress& from) -> std::optional<ListenerGate::Key> {
          // Authenticated clients are trusted with their slots; only an unproven one gives its up.
          if (conns_.size() >= kMaxClients && liveConnections() >= kMaxClients &&
              !gate_.dropLongestSilent(closeUnproven_, formatString("all %zu client slots are taken", kMaxClients))) {
            warn(formatString("refusing %s: already %zu clients, all authenticated", from.toString().c_str(),
                              conns_.size()));
            return std::nullopt;
          }
          int one = 1;
          setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          auto c = std::make_unique<Connection>();
          c->id = nextConnId_++;
          c->fd = std::move(fd);
          c->peer = from.toString();
          const uint64_t id = c->id;
          conns_.emplace(id, std::move(c));
          return id;
        },
        closeUnproven_);
  }

  void readFrom(Connection& c) {
    for (int i = 0; i < kReadChunksPerWakeup && !c.dead && backlog(c) < kOutputBackpressure; ++i) {
      size_t old = c.in.size();
      c.in.resize(old + kReadChunk);
      ssize_t n = recv(c.fd.get(), c.in.data() + old, kReadChunk, 0);
      c.in.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
      if (n > 0) {
        if (!c.authenticated) gate_.heardFrom(c.id);
        processInput(c);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (c.in.size() > c.inStart) {
        drop(c, formatString("connection ended inside a frame (%zu bytes buffered)", c.in.size() - c.inStart));
      } else if (n < 0) {
        drop(c, formatString("recv() failed: %s", strerror(errno)));
      } else {
        COLL_TRACE(kBootstrap, "rendezvous store %s: %s disconnected", name_.c_str(), c.peer.c_str());
        c.dead = true;
      }
      return;
    }
  }

  void processInput(Connection& c) {
    while (!c.dead && !c.closeAfterFlush && backlog(c) < kOutputBackpressure) {
      size_t frameBytes = 0;
      // Before the hello is accepted only a hello-sized frame is allowed: an unauthenticated peer
      // must not be able to make the server buffer up to kMaxBodyBytes.
      // An encrypting client's frames are records: a tag longer (store_protocol.h).
      size_t maxBody = c.authenticated ? wire::kMaxBodyBytes + kRecordTagBytes : wire::kMaxUnauthenticatedBodyBytes;
      auto check = wire::checkFrame(c.in.data() + c.inStart, c.in.size() - c.inStart, maxBody, &frameBytes);
      if (check == wire::FrameCheck::kIncomplete) break;
      if (check != wire::FrameCheck::kComplete) {
        drop(c, check == wire::FrameCheck::kTooLarge ? "length prefix above the limit" : "length prefix too small");
        return;
      }
      try {
        outgoing_.clear();
        const uint8_t* body = c.in.data() + c.inStart + wire::kHeaderBytes;
        if (!service_.handleFrame(c.id, c.peer, body, frameBytes - wire::kHeaderBytes, &outgoing_)) {
          c.closeAfterFlush = true;  // after the rejection reply
          warn(service_.lastRejection());
        }
        if (!c.authenticated && service_.authenticated(c.id)) {
          c.authenticated = true;
          gate_.proven(c.id);
        }
        deliver();
      } catch (const ProtocolError& e) {
        drop(c, e.what());
        return;
      }
      c.inStart += frameBytes;
    }
    // Keep `in` from growing with consumed bytes without moving data on every frame.
    if (c.inStart == c.in.size()) {
      c.in.clear();
      c.inStart = 0;
    } else if (c.inStart > c.in.size() / 2) {
      c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(c.inStart));
      c.inStart = 0;
    }
  }

  // Sends what the service produced to each addressed connection that is still open.
  void deliver() {
    for (auto& o : outgoing_) {
      auto it = conns_.find(o.conn);
      if (it != conns_.end()) reply(*it->second, std::move(o.frame));
    }
    outgoing_.clear();
  }

  void expire(Deadline now) {
    outgoing_.clear();
    service_.expire(now, &outgoing_);
    deliver();
    gate_.dropExpired(closeUnproven_);
  }

  void reply(Connection& c, Bytes frame) {
    if (c.dead) return;
    if (c.out.empty()) {
      c.out = std::move(frame);
    } else {
      c.out.insert(c.out.end(), frame.begin(), frame.end());
    }
    flush(c);
  }

  void flush(Connection& c) {
    while (c.outSent < c.out.size()) {
      ssize_t n = send(c.fd.get(), c.out.data() + c.outSent, c.out.size() - c.outSent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.outSent += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return;
      } else {
        COLL_TRACE(kBootstrap, "rendezvous store %s: send to %s failed: %s", name_.c_str(), c.peer.c_str(),
                   strerror(errno));
        c.dead = true;
        return;
      }
    }
    c.out.clear();
    c.outSent = 0;
    if (c.closeAfterFlush) c.dead = true;
  }

  void drop(Connection& c, const std::string& why) {
    warn(formatString("closing the connection from %s: %s", c.peer.c_str(), why.c_str()));
    c.dead = true;
  }

  size_t liveConnections() const {
    size_t live = 0;
    for (const auto& entry : conns_) live += entry.second->dead ? 0 : 1;
    return live;
  }

  // Rate-limited (common/listener_gate.h): a flood of bad connections costs the log a few lines.
  void warn(const std::string& what) { gate_.warn(what); }

  // Closes dead connections and forgets their parked requests.
  void reap() {
    outgoing_.clear();
    for (auto it = conns_.begin(); it != conns_.end();) {
      if (!it->second->dead) {
        ++it;
        continue;
      }
      service_.disconnect(it->first, &outgoing_);
      gate_.forget(it->first);
      it = conns_.erase(it);
    }
    deliver();  // what the closed connections' notices woke
  }

  Fd listenFd_;
  int wakeFd_;
  std::string name_;
  StoreService service_;
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns_;
  std::vector<StoreService::Outgoing> outgoing_;  // reused to avoid an allocation per request
  uint64_t nextConnId_ = 1;
  const std::atomic<bool>& stopRequested_;
  const std::atomic<bool>& endWhenIdle_;
  ListenerGate gate_;
  // The gate's Drop: closes the socket at once (accept() may need the descriptor) and leaves the
  // rest to reap(); the loop skips dead connections until then.
  const ListenerGate::Drop closeUnproven_ = [this](ListenerGate::Key key, const std::string&) {
    auto it = conns_.find(key);
    if (it == conns_.end()) return;
    it->second->fd.reset();
    it->second->dead = true;
  };
};

TcpStoreServer::TcpStoreServer(const std::string& bindHost, uint16_t port, const Secret& secret)
    : TcpStoreServer(listenOn(bindHost, port), secret) {}

TcpStoreServer::TcpStoreServer(Fd listenFd, const Secret& secret) {
  const SocketAddress bound = localAddressOf(listenFd.get());
  port_ = bound.port();
  wakeFd_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wakeFd_.valid()) throwSystemError("eventfd() for the rendezvous store");
  std::string name = formatHostPort(bound.host(), port_);
  loop_ = std::make_unique<Loop>(std::move(listenFd), wakeFd_.get(), secret, name, stopRequested_, endWhenIdle_);
  thread_ = std::thread([this] {
    loop_->runGuarded();
    // The listener and the clients' sockets close now, not when the object goes: a server that
    // ended when idle may wait in its registry a long while (bootstrap/unique_id.h).
    loop_.reset();
    finished_.store(true);
  });
  COLL_INFO(kBootstrap, "rendezvous store listening on %s", name.c_str());
}

void TcpStoreServer::endWhenIdle() {
  endWhenIdle_.store(true);
  uint64_t one = 1;
  ssize_t written = write(wakeFd_.get(), &one, sizeof(one));
  (void)written;  // only fails when the counter would overflow: the loop is awake anyway
}

TcpStoreServer::~TcpStoreServer() {
  stopRequested_.store(true);
  uint64_t one = 1;
  ssize_t written = write(wakeFd_.get(), &one, sizeof(one));
  (void)written;  // an eventfd write only fails when the counter would overflow: already signalled
  if (thread_.joinable()) thread_.join();
}

}  // namespace bootstrap
}  // namespace coll
