// A stranger flooding a listening socket, for the flood tests of every listener (the store, the
// ranks' bootstrap listener, the socket transport's): a forked process that keeps `connections`
// silent TCP connections to host:port, opening a new one each time the listener closes one, until
// it is stopped. With a greeting, each connection sends it once connected and then falls silent (a
// well-formed hello that needs no secret, say). Its own descriptor limit is its own, so the
// listener's process sees only its side of the flood. Counters live in memory shared with the
// parent.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace colltest {

class ConnectionFlood {
 public:
  struct Counters {
    std::atomic<uint64_t> opened{0};   // connections the kernel completed
    std::atomic<uint64_t> closed{0};   // of those, closed by the listener (then re-opened)
    std::atomic<uint64_t> refused{0};  // connects that failed
  };

  // Starts the flood at once. IPv4 literal hosts only (the tests' listeners are on 127.0.0.1 or
  // on this host's own address).
  ConnectionFlood(const std::string& host, uint16_t port, size_t connections, std::vector<uint8_t> greeting = {})
      : greeting_(std::move(greeting)) {
    void* shared = mmap(nullptr, sizeof(Counters), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    counters_ = new (shared) Counters();
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    inet_pton(AF_INET, host.c_str(), &to.sin_addr);
    // Everything the child needs is allocated here: it may be forked from a threaded process.
    std::vector<pollfd> fds(connections, pollfd{-1, 0, 0});
    pid_ = fork();
    if (pid_ == 0) {
      run(to, fds);
      _exit(0);
    }
  }
  ~ConnectionFlood() {
    stop();
    munmap(counters_, sizeof(Counters));
  }
  ConnectionFlood(const ConnectionFlood&) = delete;
  ConnectionFlood& operator=(const ConnectionFlood&) = delete;

  const Counters& counters() const { return *counters_; }
  // Waits until at least `opened` connections were completed, or `seconds` passed.
  bool waitForOpened(uint64_t opened, double seconds) const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (counters_->opened.load() < opened) {
      if (std::chrono::steady_clock::now() >= end) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  void run(const sockaddr_in& to, std::vector<pollfd>& fds) {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
      limit.rlim_cur = limit.rlim_max;
      setrlimit(RLIMIT_NOFILE, &limit);
    }
    for (;;) {
      for (pollfd& p : fds)
        if (p.fd < 0) open(to, &p);
      if (poll(fds.data(), fds.size(), 100) <= 0) continue;
      for (pollfd& p : fds) {
        if (p.fd < 0 || p.revents == 0) continue;
        if (p.events == POLLOUT) {
          int error = 0;
          socklen_t length = sizeof(error);
          getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &error, &length);
          if (error == 0) {
            counters_->opened.fetch_add(1);
            if (!greeting_.empty()) (void)!send(p.fd, greeting_.data(), greeting_.size(), MSG_NOSIGNAL);
            p.events = POLLIN;  // silent from now on: only its closing is of interest
            continue;
          }
          counters_->refused.fetch_add(1);
        } else {
          char byte;
          if (recv(p.fd, &byte, 1, MSG_DONTWAIT) > 0) continue;  // a reply; stay silent
          counters_->closed.fetch_add(1);
        }
        close(p.fd);
        p.fd = -1;
      }
    }
  }

  void open(const sockaddr_in& to, pollfd* p) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return;  // out of descriptors: try again next round
    if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) != 0 && errno != EINPROGRESS) {
      counters_->refused.fetch_add(1);
      close(fd);
      usleep(1000);
      return;
    }
    *p = pollfd{fd, POLLOUT, 0};
  }

  std::vector<uint8_t> greeting_;
  Counters* counters_ = nullptr;
  pid_t pid_ = -1;
};

}  // namespace colltest
