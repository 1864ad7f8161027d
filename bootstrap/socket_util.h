// Small TCP helpers shared by the rendezvous store (and usable by the socket transport): name
// resolution, connect and I/O bounded by a deadline, listening sockets, and the choice of the
// address a server advertises. Every call that can block takes a Deadline, because a bootstrap
// that waits forever on a dead peer is the hang the design forbids.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/store.h"

namespace coll {
namespace bootstrap {

// An owned file descriptor; closing is tied to scope so that no error path leaks a socket.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A resolved socket address (IPv4 or IPv6).
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  int family() const { return storage.ss_family; }
  std::string host() const;  // numeric, e.g. "10.0.0.1" or "fe80::1%eth0"
  uint16_t port() const;
  std::string toString() const;  // "10.0.0.1:29500" or "[::1]:29500"
};

// Milliseconds from now until the deadline, clamped to [0, INT32_MAX] so it can feed poll().
int pollTimeoutMs(Deadline deadline);
// Milliseconds between two instants, for error messages.
long long elapsedMs(Clock::time_point start, Clock::time_point end);
// now + timeout, saturating instead of overflowing for huge timeouts.
Deadline deadlineAfter(std::chrono::milliseconds timeout);

// "host:port", with brackets around IPv6 literals.
std::string formatHostPort(const std::string& host, uint16_t port);
// Splits "host:port", "[v6]:port" (port 1..65535); false when malformed.
bool splitHostPort(const std::string& text, std::string* host, uint16_t* port);

// Resolves host (a name or a numeric IPv4/IPv6 address) for a TCP stream socket. An empty host
// with passive=true means every local interface. Throws collInvalidUsage when the name does not
// resolve; EAI_AGAIN (a transient DNS failure) is reported as collSystemError.
std::vector<SocketAddress> resolveAddresses(const std::string& host, uint16_t port, bool passive = false);

// Connects to host:port before the deadline. Refused, reset and unreachable attempts (and names
// that do not resolve yet) are retried with a short backoff, because the server is often a peer
// that has not started listening yet. getaddrinfo() itself cannot be interrupted, so a hung
// resolver can overrun the deadline by its own timeout.
// The socket is returned non-blocking, close-on-exec, with TCP_NODELAY. On timeout throws
// collTimeout: "no <peerName> at host:port after N ms (last error: ...)".
Fd connectWithDeadline(const std::string& host, uint16_t port, Deadline deadline, const char* peerName = "listener");

enum class IoStatus { kOk, kClosed, kTimeout };

// Send or receive exactly `size` bytes on a non-blocking socket, polling until the deadline.
// kClosed means the peer closed or reset the connection (for recvAll: EOF, possibly mid-buffer).
// Unexpected socket errors throw collSystemError. SIGPIPE is never raised.
IoStatus sendAll(int fd, const void* data, size_t size, Deadline deadline);
IoStatus recvAll(int fd, void* data, size_t size, Deadline deadline);

void setNoDelay(int fd);
void setNonBlocking(int fd, bool nonBlocking);

// A listening TCP socket on host:port (port 0: the kernel picks one; empty host, "*", "0.0.0.0"
// or "::": every interface, IPv6 dual-stack where the kernel allows, else IPv4). Non-blocking and
// close-on-exec. Throws collSystemError (naming the address) when it cannot bind.
Fd listenOn(const std::string& host, uint16_t port, int backlog = 1024);

// The address bound to a socket (its ephemeral port after listen/connect).
SocketAddress localAddressOf(int fd);

// The numeric local address this host would use to reach `host` (a connected UDP socket, so no
// packet is sent). Throws when host does not resolve or no route exists.
std::string localAddressRoutingTo(const std::string& host);

struct InterfaceAddress {
  std::string name;     // e.g. "eth0"
  std::string address;  // numeric
  int family = 0;       // AF_INET or AF_INET6
  bool loopback = false;
};

// Up interfaces with an IPv4 or a non-link-local IPv6 address, in getifaddrs order.
std::vector<InterfaceAddress> listInterfaces();

// Picks the address a server should bind and advertise. `ifnameSpec` follows COLL_SOCKET_IFNAME:
// a comma list of interface-name prefixes; a leading '^' excludes the listed names instead, a
// leading '=' (after any '^') makes them exact names. Among matches IPv4 wins over IPv6.
// Empty spec: the first non-loopback IPv4 interface, else the first loopback address. Throws
// collInvalidUsage when the spec matches nothing (the message lists the interfaces).
std::string chooseInterfaceAddress(const std::vector<InterfaceAddress>& interfaces, const std::string& ifnameSpec);

// chooseInterfaceAddress(listInterfaces(), $COLL_SOCKET_IFNAME).
std::string defaultServerAddress();

}  // namespace bootstrap
}  // namespace coll
