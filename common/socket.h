// TCP helpers shared by the rendezvous store (bootstrap/) and the socket transport
// (transport/net/): name resolution, connect and I/O bounded by a deadline, listening sockets,
// and the route to a host. Every call that can block takes a Deadline.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/fd.h"

namespace coll {

// A resolved socket address (IPv4 or IPv6).
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  int family() const { return storage.ss_family; }
  std::string host() const;  // numeric, e.g. "10.0.0.1" or "fe80::1%eth0"
  uint16_t port() const;
  std::string toString() const;  // "10.0.0.1:29500" or "[::1]:29500"
  // 127.0.0.0/8 or ::1: reachable from this host only.
  bool isLoopback() const;
};

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
// collTimeout: "no <peerName> at host:port after N ms (last error: ...)". `betweenTries`, when
// given, runs before each wait between attempts (it may throw to give up early: the peer is known
// to be gone).
Fd connectWithDeadline(const std::string& host, uint16_t port, Deadline deadline, const char* peerName = "listener",
                       const std::function<void()>& betweenTries = {});

enum class IoStatus { kOk, kClosed, kTimeout };

// Send or receive exactly `size` bytes on a non-blocking socket, polling until the deadline.
// kClosed means the peer closed or reset the connection (for recvAll: EOF, possibly mid-buffer).
// Unexpected socket errors throw collSystemError. SIGPIPE is never raised.
IoStatus sendAll(int fd, const void* data, size_t size, Deadline deadline);
IoStatus recvAll(int fd, void* data, size_t size, Deadline deadline);

void setNoDelay(int fd);
void setNonBlocking(int fd, bool nonBlocking);

// Fixes a socket's send and receive buffers at `bytes` each (SO_SNDBUF, SO_RCVBUF; the kernel
// doubles the figure for its bookkeeping). False when the kernel refuses either: the buffers are
// a matter of speed, and the socket works as it was.
bool setSocketBuffers(int fd, size_t bytes);

// A listening TCP socket on host:port (port 0: the kernel picks one; empty host, "*", "0.0.0.0"
// or "::": every interface, IPv6 dual-stack where the kernel allows, else IPv4). Non-blocking and
// close-on-exec. Throws collSystemError (naming the address) when it cannot bind.
Fd listenOn(const std::string& host, uint16_t port, int backlog = 1024);

// The address bound to a socket (its ephemeral port after listen/connect).
SocketAddress localAddressOf(int fd);

// The numeric local address this host would use to reach `host` (a connected UDP socket, so no
// packet is sent). Throws when host does not resolve or no route exists.
std::string localAddressRoutingTo(const std::string& host);

}  // namespace coll
