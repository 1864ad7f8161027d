#include "common/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/error.h"

namespace coll {

bool SocketAddress::isLoopback() const {
  const std::string text = host();
  return (family() == AF_INET && text.rfind("127.", 0) == 0) || text == "::1";
}

std::string SocketAddress::host() const {
  char text[NI_MAXHOST] = "";
  if (family() == AF_INET6) {
    // A dual-stack listener sees IPv4 peers as ::ffff:a.b.c.d; logs read better as a.b.c.d.
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], text, sizeof(text))) {
      return text;
    }
  }
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&storage), length, text, sizeof(text), nullptr, 0,
                  NI_NUMERICHOST) != 0) {
    return "?";
  }
  return text;
}

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

std::string SocketAddress::toString() const { return formatHostPort(host(), port()); }

std::string formatHostPort(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

bool splitHostPort(const std::string& text, std::string* host, uint16_t* port) {
  std::string hostPart, portPart;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') return false;
    hostPart = text.substr(1, close - 1);
    portPart = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    // A bare IPv6 literal has several colons and is ambiguous without brackets.
    if (colon == std::string::npos || text.find(':') != colon) return false;
    hostPart = text.substr(0, colon);
    portPart = text.substr(colon + 1);
  }
  if (hostPart.empty() || portPart.empty() || portPart.size() > 5) return false;
  if (!std::all_of(portPart.begin(), portPart.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  long value = std::strtol(portPart.c_str(), nullptr, 10);
  if (value < 1 || value > 65535) return false;
  *host = hostPart;
  *port = static_cast<uint16_t>(value);
  return true;
}

std::vector<SocketAddress> resolveAddresses(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* list = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &list);
  if (rc != 0) {
    collResult_t code = (rc == EAI_AGAIN || rc == EAI_SYSTEM) ? collSystemError : collInvalidUsage;
    throwError(code, "cannot resolve host '%s': %s", host.c_str(), gai_strerror(rc));
  }
  std::vector<SocketAddress> result;
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
    SocketAddress address;
    memcpy(&address.storage, ai->ai_addr, ai->ai_addrlen);
    address.length = ai->ai_addrlen;
    result.push_back(address);
  }
  freeaddrinfo(list);
  if (result.empty()) throwError(collInvalidUsage, "host '%s' has no TCP address", host.c_str());
  return result;
}

void setNoDelay(int fd) {
  int one = 1;
  COLL_SYSCHECK(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), "setsockopt(TCP_NODELAY)");
}

bool setSocketBuffers(int fd, size_t bytes) {
  const int value = static_cast<int>(bytes);
  return setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &value, sizeof(value)) == 0 &&
         setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, sizeof(value)) == 0;
}

void setNonBlocking(int fd, bool nonBlocking) {
  int flags = fcntl(fd, F_GETFL, 0);
  COLL_SYSCHECK(flags, "fcntl(F_GETFL)");
  flags = nonBlocking ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  COLL_SYSCHECK(fcntl(fd, F_SETFL, flags), "fcntl(F_SETFL)");
}

namespace {

// Errors after which a later attempt may succeed: nobody listening yet, a listener restarting,
// a route or neighbour entry not ready yet.
bool isRetryableConnectError(int error) {
  return error == ECONNREFUSED || error == ECONNRESET || error == ECONNABORTED || error == ETIMEDOUT ||
         error == EHOSTUNREACH || error == ENETUNREACH || error == EAGAIN || error == EINTR;
}

// Retrying connects to a local port nobody listens on can end in a TCP simultaneous open with
// itself (the kernel picks the destination port as the source port): that is no server.
bool isSelfConnection(int fd) {
  SocketAddress local = localAddressOf(fd);
  SocketAddress peer;
  peer.length = sizeof(peer.storage);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer.storage), &peer.length) != 0) return false;
  return local.port() == peer.port() && local.host() == peer.host();
}

// One non-blocking connect attempt bounded by the deadline. Returns the socket, or an invalid Fd
// with *error set.
Fd tryConnect(const SocketAddress& address, Deadline deadline, int* error) {
  Fd fd(socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throwSystemError("socket()");
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) {
    if (errno != EINPROGRESS) {
      *error = errno;
      return Fd();
    }
    pollfd pfd{fd.get(), POLLOUT, 0};
    int rc;
    do {
      rc = poll(&pfd, 1, pollTimeoutMs(deadline));
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) throwSystemError("poll() while connecting");
    if (rc == 0) {
      *error = ETIMEDOUT;
      return Fd();
    }
    int soError = 0;
    socklen_t len = sizeof(soError);
    COLL_SYSCHECK(getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soError, &len), "getsockopt(SO_ERROR)");
    if (soError != 0) {
      *error = soError;
      return Fd();
    }
  }
  if (isSelfConnection(fd.get())) {
    *error = ECONNREFUSED;
    return Fd();
  }
  return fd;
}

}  // namespace

Fd connectWithDeadline(const std::string& host, uint16_t port, Deadline deadline, const char* peerName,
                       const std::function<void()>& betweenTries) {
  const auto start = Clock::now();
  auto backoff = std::chrono::milliseconds(10);
  int lastError = 0;
  std::string lastErrorText = "none";
  while (true) {
    std::vector<SocketAddress> addresses;
    try {
      addresses = resolveAddresses(host, port);
    } catch (const CollError& e) {
      // Retried like a refused connection: a launcher's host name (a Kubernetes headless
      // service, a fresh Slurm node) may only appear in DNS once that host is up. A typo then
      // costs the whole deadline, but the timeout message carries the resolver's answer.
      lastErrorText = e.what();
    }
    for (const SocketAddress& address : addresses) {
      int error = 0;
      Fd fd = tryConnect(address, deadline, &error);
      if (fd.valid()) {
        setNoDelay(fd.get());
        return fd;
      }
      if (!isRetryableConnectError(error)) {
        errno = error;
        throwSystemError(formatString("connect() to %s", formatHostPort(host, port).c_str()).c_str());
      }
      lastError = error;
      lastErrorText = strerror(lastError);
    }
    if (betweenTries) betweenTries();
    auto now = Clock::now();
    if (now >= deadline) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
  throwError(collTimeout, "no %s at %s after %lld ms (last error: %s)", peerName, formatHostPort(host, port).c_str(),
             elapsedMs(start, Clock::now()), lastErrorText.c_str());
}

namespace {

// Waits until fd is ready for `events` or the deadline passes; false on timeout.
bool waitReady(int fd, short events, Deadline deadline) {
  pollfd pfd{fd, events, 0};
  while (true) {
    int rc = poll(&pfd, 1, pollTimeoutMs(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throwSystemError("poll()");
  }
}

bool isConnectionLoss(int error) { return error == EPIPE || error == ECONNRESET || error == ENOTCONN; }

}  // namespace

IoStatus sendAll(int fd, const void* data, size_t size, Deadline deadline) {
  const char* bytes = static_cast<const char*>(data);
  size_t sent = 0;
  while (sent < size) {
    ssize_t n = send(fd, bytes + sent, size - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!waitReady(fd, POLLOUT, deadline)) return IoStatus::kTimeout;
      continue;
    }
    if (n < 0 && isConnectionLoss(errno)) return IoStatus::kClosed;
    throwSystemError("send()");
  }
  return IoStatus::kOk;
}

IoStatus recvAll(int fd, void* data, size_t size, Deadline deadline) {
  char* bytes = static_cast<char*>(data);
  size_t received = 0;
  while (received < size) {
    ssize_t n = recv(fd, bytes + received, size - received, 0);
    if (n > 0) {
      received += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return IoStatus::kClosed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!waitReady(fd, POLLIN, deadline)) return IoStatus::kTimeout;
      continue;
    }
    if (isConnectionLoss(errno)) return IoStatus::kClosed;
    throwSystemError("recv()");
  }
  return IoStatus::kOk;
}

namespace {

bool isWildcardHost(const std::string& host) {
  return host.empty() || host == "*" || host == "0.0.0.0" || host == "::";
}

// Binds and listens on one address; returns an invalid Fd with *error set on failure.
Fd tryListen(const SocketAddress& address, int backlog, bool dualStack, int* error) {
  Fd fd(socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    *error = errno;
    return Fd();
  }
  // Lets a restarted job reuse its port while old connections sit in TIME_WAIT.
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (address.family() == AF_INET6) {
    int v6only = dualStack ? 0 : 1;
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
  }
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0 ||
      listen(fd.get(), backlog) != 0) {
    *error = errno;
    return Fd();
  }
  return fd;
}

}  // namespace

Fd listenOn(const std::string& host, uint16_t port, int backlog) {
  std::vector<SocketAddress> candidates;
  bool wildcard = isWildcardHost(host);
  if (wildcard) {
    // "::" with IPV6_V6ONLY off accepts IPv4 too; kernels without IPv6 fall back to 0.0.0.0.
    if (host != "0.0.0.0") candidates.push_back(resolveAddresses("::", port, true).front());
    if (host != "::") candidates.push_back(resolveAddresses("0.0.0.0", port, true).front());
  } else {
    candidates = resolveAddresses(host, port, true);
  }
  int error = 0;
  for (const SocketAddress& address : candidates) {
    Fd fd = tryListen(address, backlog, wildcard, &error);
    if (fd.valid()) return fd;
  }
  errno = error;
  throwSystemError(
      formatString("cannot listen on %s", formatHostPort(host.empty() ? "*" : host, port).c_str()).c_str());
}

SocketAddress localAddressOf(int fd) {
  SocketAddress address;
  address.length = sizeof(address.storage);
  COLL_SYSCHECK(getsockname(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length), "getsockname()");
  return address;
}

std::string localAddressRoutingTo(const std::string& host) {
  // Any port works: connect() on a UDP socket only selects the route and source address.
  SocketAddress target = resolveAddresses(host, 9).front();
  Fd fd(socket(target.family(), SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throwSystemError("socket(SOCK_DGRAM)");
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&target.storage), target.length) != 0) {
    throwSystemError(formatString("no route to %s", host.c_str()).c_str());
  }
  return localAddressOf(fd.get()).host();
}

}  // namespace coll
