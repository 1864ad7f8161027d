// The carrier's writer side and its thread (emu_carrier.h, emu_carrier_impl.h): writes queued by
// ibv_post_send go out on one TCP connection per QP, each answered in order by the peer's carrier;
// the answers, or their absence past the QP's retry time, decide the send completions.
#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <thread>

#include "emu_carrier.h"
#include "emu_carrier_impl.h"

namespace verbs_emu {
namespace {

Carrier* instance = nullptr;  // this process's (registry lock held to read or set)
pid_t instanceOwner = 0;

uint64_t ownNetns() {
  struct stat st;
  return stat("/proc/self/ns/net", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

// How long real RC retries before it reports IBV_WC_RETRY_EXC_ERR: 4.096 us x 2^timeout per try,
// retry_cnt tries after the first. Timeout 0 waits for ever on a device: an hour here.
std::chrono::nanoseconds retryTimeOf(const QpSlot& qp) {
  if (qp.timeout == 0) return std::chrono::hours(1);
  const double seconds = 4.096e-6 * std::ldexp(1.0, qp.timeout) * (qp.retryCount + 1);
  return std::chrono::nanoseconds(static_cast<int64_t>(seconds * 1e9));
}

// The IPv4 addresses of this network namespace's interfaces that are up, loopback aside (a writer
// in another namespace cannot reach ours) unless every write is carried, within one namespace too.
std::vector<uint32_t> ownAddresses() {
  std::vector<uint32_t> found;
  if (tcpCarriage() == Carriage::kAll) found.push_back(htonl(INADDR_LOOPBACK));
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return found;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next)
    if (a->ifa_addr != nullptr && a->ifa_addr->sa_family == AF_INET && (a->ifa_flags & IFF_UP) != 0 &&
        (a->ifa_flags & IFF_LOOPBACK) == 0)
      found.push_back(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
  freeifaddrs(list);
  return found;
}

void closeFd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

}  // namespace

bool receiveAvailable(int fd, std::string* into) {
  char buffer[64 << 10];
  for (;;) {
    ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n > 0) {
      into->append(buffer, static_cast<size_t>(n));
    } else {
      return n < 0 && (errno == EAGAIN || errno == EINTR);
    }
  }
}

Carriage tcpCarriage() {
  static const Carriage mode = [] {
    const char* value = std::getenv("COLL_VERBS_EMU_TCP");
    if (value != nullptr && std::strcmp(value, "1") == 0) return Carriage::kAcrossNamespaces;
    if (value != nullptr && std::strcmp(value, "all") == 0) return Carriage::kAll;
    return Carriage::kOff;
  }();
  return mode;
}

Carrier* Carrier::get() {
  if (instance != nullptr && instanceOwner == getpid()) return instance;
  // A child forked after its parent started one inherits the sockets but not the thread: it
  // closes them (the parent's peers must still see the parent's connections end with the parent)
  // and starts its own. The parent's object stays as it was: its mutex may have been held.
  if (instance != nullptr) instance->abandon();
  auto* carrier = new Carrier;
  if (!carrier->start()) {
    carrier->abandon();
    delete carrier;
    return nullptr;
  }
  instance = carrier;
  instanceOwner = getpid();
  return carrier;
}

bool Carrier::start() {
  listenFd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t length = sizeof(any);
  if (listenFd_ < 0 || wakeFd_ < 0 || bind(listenFd_, reinterpret_cast<sockaddr*>(&any), sizeof(any)) != 0 ||
      listen(listenFd_, 64) != 0 || getsockname(listenFd_, reinterpret_cast<sockaddr*>(&any), &length) != 0)
    return false;
  port = ntohs(any.sin_port);
  addresses = ownAddresses();
  try {
    std::thread([this] { run(); }).detach();  // lives as long as the process
  } catch (const std::system_error&) {
    return false;
  }
  return true;
}

void Carrier::abandon() {
  closeFd(&listenFd_);
  closeFd(&wakeFd_);
  for (Incoming& in : incoming_) closeFd(&in.fd);
  for (auto& entry : outgoing) closeFd(&entry.second.fd);
}

void Carrier::wake() {
  const uint64_t one = 1;
  if (write(wakeFd_, &one, sizeof(one)) < 0) {
    // Already signalled (the counter cannot overflow in practice): the thread wakes anyway.
  }
}

void Carrier::connectNext(Outgoing& o) {
  while (o.nextPeer < o.peers.size()) {
    const sockaddr_in& to = o.peers[o.nextPeer++];
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) == 0 || errno == EINPROGRESS) {
      o.fd = fd;
      o.connected = false;
      return;
    }
    close(fd);
  }
  fail(o, IBV_WC_RETRY_EXC_ERR);  // no address of the peer's answers
}

void Carrier::fail(Outgoing& o, int status) {
  // As a QP in error: the first write waiting for an answer gets `status`, the rest are flushed.
  // With none waiting (the peer died after answering them all), the next write posted gets it, as
  // a device's next write would once its retries ran out.
  bool first = true;
  for (Outgoing::Write& w : o.writes)
    if (w.status < 0) {
      w.status = first ? status : IBV_WC_WR_FLUSH_ERR;
      first = false;
    }
  if (first && status != IBV_WC_WR_FLUSH_ERR) o.unreported = status;
  o.broken = true;
  closeFd(&o.fd);
  o.out.clear();
  o.outSent = 0;
  o.acks.clear();
  decided = true;
}

void Carrier::pumpOutgoing(Outgoing& o, short revents) {
  if (!o.connected) {
    if ((revents & (POLLOUT | POLLERR | POLLHUP)) == 0) return;
    int err = 0;
    socklen_t length = sizeof(err);
    if (getsockopt(o.fd, SOL_SOCKET, SO_ERROR, &err, &length) != 0 || err != 0) {
      closeFd(&o.fd);
      return connectNext(o);
    }
    o.connected = true;
  }
  while (o.outSent < o.out.size()) {
    ssize_t n = send(o.fd, o.out.data() + o.outSent, o.out.size() - o.outSent, MSG_NOSIGNAL);
    if (n > 0) {
      o.outSent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      break;
    } else {
      return fail(o, IBV_WC_RETRY_EXC_ERR);  // reset: the peer's process ended, or its host went away
    }
  }
  if (o.outSent == o.out.size()) {
    o.out.clear();
    o.outSent = 0;
  }
  if ((revents & (POLLIN | POLLERR | POLLHUP)) == 0) return;
  if (!receiveAvailable(o.fd, &o.acks)) return fail(o, IBV_WC_RETRY_EXC_ERR);  // the peer's end closed
  size_t used = 0;
  for (; o.acks.size() - used >= sizeof(WireAck); used += sizeof(WireAck)) {
    WireAck ack;
    std::memcpy(&ack, o.acks.data() + used, sizeof(ack));
    auto waiting =
        std::find_if(o.writes.begin(), o.writes.end(), [](const Outgoing::Write& w) { return w.status < 0; });
    // An answer to nothing, or not an answer: the connection is not to be trusted any more.
    if (ack.magic != kAckMagic || waiting == o.writes.end() || ack.status < 0) return fail(o, IBV_WC_RETRY_EXC_ERR);
    waiting->status = ack.status;
    decided = true;
    if (ack.status != IBV_WC_SUCCESS) return fail(o, IBV_WC_WR_FLUSH_ERR);
  }
  o.acks.erase(0, used);
}

void Carrier::deliver() {
  {
    std::lock_guard<std::mutex> guard(mutex);
    if (!decided) return;
  }
  Registry* r = registry();
  Locked lock(r);
  std::lock_guard<std::mutex> guard(mutex);
  decided = false;
  for (auto& [qpn, o] : outgoing) {
    const int q = findQp(r, qpn);
    while (!o.writes.empty() && o.writes.front().status >= 0) {
      const Outgoing::Write w = o.writes.front();
      o.writes.pop_front();
      CqSlot& cq = r->cqs[o.sendCq];
      if (cq.owed > 0) --cq.owed;
      if (w.status != IBV_WC_SUCCESS && q >= 0) r->qps[q].state = o.qp->state = IBV_QPS_ERR;
      if (w.status == IBV_WC_SUCCESS && !w.signaled) continue;
      ibv_wc wc{};
      wc.wr_id = w.wrId;
      wc.status = static_cast<ibv_wc_status>(w.status);
      wc.opcode = IBV_WC_RDMA_WRITE;
      wc.qp_num = qpn;
      pushCompletion(&cq, wc);
    }
  }
}

// Gathers what the thread polls: the wake-up, the listener, every incoming connection, and every
// QP's connection (made here when it has bytes to send). Returns the poll timeout: short while
// some write waits for its answer (its retry time is counted here), else none.
int Carrier::collect(std::vector<pollfd>* fds, std::vector<uint32_t>* qpns) {
  fds->clear();
  qpns->clear();
  fds->push_back({wakeFd_, POLLIN, 0});
  fds->push_back({listenFd_, POLLIN, 0});
  for (const Incoming& in : incoming_)
    fds->push_back({in.fd, static_cast<short>(POLLIN | (in.acks.empty() ? 0 : POLLOUT)), 0});
  std::lock_guard<std::mutex> guard(mutex);
  bool waiting = false;
  const auto now = CarrierClock::now();
  for (auto it = outgoing.begin(); it != outgoing.end();) {
    Outgoing& o = it->second;
    if (o.forgotten) {
      closeFd(&o.fd);
      it = outgoing.erase(it);
      continue;
    }
    auto first = std::find_if(o.writes.begin(), o.writes.end(), [](const Outgoing::Write& w) { return w.status < 0; });
    if (!o.broken && first != o.writes.end() && now >= first->deadline) fail(o, IBV_WC_RETRY_EXC_ERR);
    waiting = waiting || (!o.broken && first != o.writes.end());
    if (!o.broken && o.fd < 0 && o.outSent < o.out.size()) connectNext(o);
    if (o.fd >= 0) {
      const bool sending = !o.connected || o.outSent < o.out.size();
      fds->push_back({o.fd, static_cast<short>(POLLIN | (sending ? POLLOUT : 0)), 0});
      qpns->push_back(it->first);
    }
    ++it;
  }
  return waiting || decided ? 10 : -1;
}

void Carrier::run() {
  std::vector<pollfd> fds;
  std::vector<uint32_t> qpns;
  for (;;) {
    const int timeoutMs = collect(&fds, &qpns);
    if (poll(fds.data(), fds.size(), timeoutMs) < 0) {
      // Interrupted, or out of resources for a moment: the next round polls again (after a pause,
      // so that a failure that persists does not spin).
      if (errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (fds[0].revents != 0) {
      uint64_t count = 0;
      if (read(wakeFd_, &count, sizeof(count)) < 0) {
        // Nothing was pending: a spurious wake-up costs one round.
      }
    }
    // The incoming connections are this thread's alone; those that fail are dropped here. The
    // ones polled come first in `fds`, in order; new ones are accepted after them.
    for (size_t i = 0; i < incoming_.size(); ++i)
      if (fds[2 + i].revents != 0 && !serve(incoming_[i])) closeFd(&incoming_[i].fd);
    incoming_.erase(std::remove_if(incoming_.begin(), incoming_.end(), [](const Incoming& in) { return in.fd < 0; }),
                    incoming_.end());
    if (fds[1].revents != 0) accept();
    {
      std::lock_guard<std::mutex> guard(mutex);
      const size_t firstOut = fds.size() - qpns.size();
      for (size_t i = 0; i < qpns.size(); ++i) {
        auto it = outgoing.find(qpns[i]);
        if (it != outgoing.end() && it->second.fd == fds[firstOut + i].fd)
          pumpOutgoing(it->second, fds[firstOut + i].revents);
      }
    }
    deliver();
  }
}

void publishCarrier(QpSlot* slot) {
  slot->netns = ownNetns();
  slot->carrierPort = 0;
  std::memset(slot->carrierAddrs, 0, sizeof(slot->carrierAddrs));
  if (tcpCarriage() == Carriage::kOff) return;
  Carrier* carrier = Carrier::get();
  if (carrier == nullptr) return;  // peers then write to it as to a QP of their own namespace
  slot->carrierPort = carrier->port;
  for (size_t i = 0; i < carrier->addresses.size() && i < static_cast<size_t>(kMaxCarrierAddrs); ++i)
    slot->carrierAddrs[i] = carrier->addresses[i];
}

bool carriedQp(Registry* r, QpSlot& self) {
  if (self.carried == 0) {
    const int d = findQp(r, self.destQpn);
    const bool elsewhere =
        d >= 0 && (r->qps[d].netns != self.netns || (tcpCarriage() == Carriage::kAll && r->qps[d].pid != self.pid));
    if (d >= 0) self.carried = self.carrierPort != 0 && r->qps[d].carrierPort != 0 && elsewhere ? 1 : -1;
  }
  return self.carried == 1;
}

void carryWrite(Registry* r, QpSlot& self, ibv_qp* qp, uint64_t wrId, bool signaled, const WriteRequest& write,
                const Gathered& g, ibv_wc_status status) {
  CqSlot& cq = r->cqs[self.sendCq];
  Carrier* carrier = Carrier::get();
  if (carrier == nullptr) {
    // It existed when the QP was made (carriedQp needs its port); should it be gone, the write
    // still completes, as one that nobody answered.
    ibv_wc wc{};
    wc.wr_id = wrId;
    wc.status = status == IBV_WC_SUCCESS ? IBV_WC_RETRY_EXC_ERR : status;
    wc.opcode = IBV_WC_RDMA_WRITE;
    wc.qp_num = self.qpn;
    self.state = IBV_QPS_ERR;
    pushCompletion(&cq, wc);
    return;
  }
  std::lock_guard<std::mutex> guard(carrier->mutex);
  Outgoing& o = carrier->outgoing[self.qpn];
  if (o.qpn == 0) {
    o.qpn = self.qpn;
    o.qp = qp;
    o.sendCq = self.sendCq;
    o.retryTime = retryTimeOf(self);
    const int d = findQp(r, self.destQpn);
    for (int i = 0; d >= 0 && i < kMaxCarrierAddrs; ++i) {
      if (r->qps[d].carrierAddrs[i] == 0) continue;
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(r->qps[d].carrierPort);
      to.sin_addr.s_addr = r->qps[d].carrierAddrs[i];
      o.peers.push_back(to);
    }
  }
  const auto now = CarrierClock::now();
  if (o.broken && status == IBV_WC_SUCCESS) {
    status = o.unreported >= 0 ? static_cast<ibv_wc_status>(o.unreported) : IBV_WC_WR_FLUSH_ERR;
    o.unreported = -1;
  }
  if (status != IBV_WC_SUCCESS) {
    o.writes.push_back({wrId, signaled, status, now});
    carrier->decided = true;
  } else {
    const WireWrite header{kWriteMagic, self.qpn,   self.destQpn,     write.opcode,
                           write.imm,   write.rkey, write.remoteAddr, write.bytes};
    o.out.append(reinterpret_cast<const char*>(&header), sizeof(header));
    for (int i = 0; i < g.count; ++i) o.out.append(static_cast<const char*>(g.iov[i].iov_base), g.iov[i].iov_len);
    o.writes.push_back({wrId, signaled, -1, now + o.retryTime});
  }
  ++cq.owed;
  carrier->wake();
}

void forgetQp(Registry* r, uint32_t qpn) {
  if (instance == nullptr || instanceOwner != getpid()) return;
  std::lock_guard<std::mutex> guard(instance->mutex);
  auto it = instance->outgoing.find(qpn);
  if (it == instance->outgoing.end()) return;
  Outgoing& o = it->second;
  CqSlot& cq = r->cqs[o.sendCq];
  cq.owed -= std::min<uint32_t>(cq.owed, static_cast<uint32_t>(o.writes.size()));
  o.writes.clear();
  o.forgotten = true;
  instance->wake();
}

}  // namespace verbs_emu
