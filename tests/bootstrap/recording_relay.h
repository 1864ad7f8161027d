// A relay between one store client and the store that records what each side sent, for tests
// that check what crosses the wire (the secret, under COLL_NET_ENCRYPT the keys and values).
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <thread>

#include "bootstrap/store.h"
#include "common/socket.h"
#include "test_helpers.h"

namespace coll {
namespace bootstrap {
namespace testing {

// Relays one client connection to the store and records what each side sent.
class RecordingRelay {
 public:
  explicit RecordingRelay(uint16_t storePort) : listener_(listenOn("127.0.0.1", 0)), storePort_(storePort) {
    port_ = localAddressOf(listener_.get()).port();
    thread_ = std::thread([this] { run(); });
  }
  ~RecordingRelay() {
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const { return port_; }
  // Waits for the client to close its connection; returns everything it sent.
  Bytes finish() {
    thread_.join();
    return fromClient_;
  }
  // After finish(): everything the store sent.
  const Bytes& fromStore() const { return fromStore_; }

 private:
  void run() {
    pollfd waitForClient{listener_.get(), POLLIN, 0};
    if (poll(&waitForClient, 1, 5000) != 1) return;  // the listener is non-blocking
    Fd client(accept(listener_.get(), nullptr, nullptr));
    Fd store = connectWithDeadline("127.0.0.1", storePort_, in(2000));
    auto deadline = in(10000);
    while (Clock::now() < deadline) {
      pollfd fds[2] = {{client.get(), POLLIN, 0}, {store.get(), POLLIN, 0}};
      if (poll(fds, 2, 100) <= 0) continue;
      uint8_t chunk[65536];
      for (int i = 0; i < 2; ++i) {
        if (fds[i].revents == 0) continue;
        ssize_t n = recv(fds[i].fd, chunk, sizeof(chunk), 0);
        if (n <= 0) return;
        Bytes& record = i == 0 ? fromClient_ : fromStore_;
        record.insert(record.end(), chunk, chunk + n);
        sendAll(fds[1 - i].fd, chunk, static_cast<size_t>(n), in(2000));
      }
    }
  }
  Fd listener_;
  uint16_t storePort_;
  uint16_t port_ = 0;
  Bytes fromClient_;
  Bytes fromStore_;
  std::thread thread_;
};

}  // namespace testing
}  // namespace bootstrap
}  // namespace coll
