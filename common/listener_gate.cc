#include "common/listener_gate.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/fd_limit.h"

namespace coll {
namespace {

// Below this the room is too small to be worth bounding by the limit.
constexpr size_t kMinCapacity = 16;
// What accept() needs when it fails for want of a descriptor or memory: nothing waits that long.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
constexpr size_t kMaxAcceptBatch = 64;
// Candidates to make room that dropLongestSilent looks at for unread bytes, at most: a flood that
// trickles bytes cannot make each drop scan the whole room.
constexpr int kMaxUnreadChecks = 8;

bool bytesWaitUnread(int fd) {
  char byte = 0;
  return fd >= 0 && recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

bool isOutOfResources(int error) { return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM; }

}  // namespace

void WarningLimiter::warn(const std::string& prefix, const std::string& what) {
  const Deadline now = Clock::now();
  if (now >= intervalEnd_) {
    if (suppressed_ > 0)
      logMessage(LogLevel::kWarn, subsys_, "%s: %d more such warnings in the last %lld s were not printed",
                 prefix.c_str(), suppressed_, static_cast<long long>(interval_.count()));
    intervalEnd_ = now + interval_;
    printed_ = 0;
    suppressed_ = 0;
  }
  if (printed_ >= perInterval_) {
    ++suppressed_;
    return;
  }
  ++printed_;
  logMessage(LogLevel::kWarn, subsys_, "%s: %s%s", prefix.c_str(), what.c_str(),
             printed_ == perInterval_ ? " (further warnings in this interval are counted)" : "");
}

ListenerGate::ListenerGate(std::string name, LogSubsys subsys, GateRules rules)
    : name_(std::move(name)), rules_(rules), warnings_(subsys) {
  // A quarter of the limit each: a process may run three listeners (rank 0: the store, its
  // bootstrap listener, its socket transport's) and still have room for its real connections.
  const size_t limit = raiseOpenFileLimit();
  capacity_ = std::max<size_t>(1, std::min(rules_.maxUnproven, std::max(kMinCapacity, limit / 4)));
}

int ListenerGate::listenerToPoll(int listenFd) const { return Clock::now() < pausedUntil_ ? -1 : listenFd; }

void ListenerGate::acceptPending(int listenFd, const Take& take, const Drop& drop) {
  if (Clock::now() < pausedUntil_) return;
  const size_t batch = std::min(kMaxAcceptBatch, std::max<size_t>(1, capacity_ / 2));
  for (size_t accepted = 0; accepted < batch;) {
    sockaddr_storage storage{};
    socklen_t length = sizeof(storage);
    Fd fd(accept4(listenFd, reinterpret_cast<sockaddr*>(&storage), &length, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      const int error = errno;
      if (error == EINTR || error == ECONNABORTED || error == EPROTO) continue;
      if (error == EAGAIN || error == EWOULDBLOCK) return;
      if (!outOfDescriptors(listenFd, error, drop)) return;
      continue;
    }
    ++accepted;
    SocketAddress from;
    memcpy(&from.storage, &storage, sizeof(storage));
    from.length = length;
    if (entries_.size() >= capacity_)
      dropLongestSilent(drop, formatString("all %zu places for connections not yet proven are taken", capacity_));
    const int raw = fd.get();
    std::optional<Key> key = take(fd, from);
    if (!key) continue;
    // What a real rank sends right after connecting is often here already.
    admit(*key, bytesWaitUnread(raw), raw);
  }
}

bool ListenerGate::outOfDescriptors(int listenFd, int error, const Drop& drop) {
  // The kernel takes the descriptor before it looks at the queue: with no connection waiting
  // there is nothing to make room for.
  pollfd waiting{listenFd, POLLIN, 0};
  if (poll(&waiting, 1, 0) <= 0) return false;
  if (isOutOfResources(error) &&
      dropLongestSilent(drop, formatString("accept() found no descriptor (%s): the longest-silent connection gives "
                                           "up its own",
                                           strerror(error))))
    return true;
  warn(formatString("accept() failed: %s; pausing %lld ms", strerror(error),
                    static_cast<long long>(kAcceptPause.count())));
  pausedUntil_ = Clock::now() + kAcceptPause;
  return false;
}

void ListenerGate::admit(Key key, bool spoke, int fd) {
  remove(key);
  const Deadline now = Clock::now();
  Entry entry{now + rules_.helloTimeout, spoke, now, fd};
  entries_.emplace(key, entry);
  (spoke ? spoke_ : neverSpoke_).emplace(now, key);
  byDeadline_.emplace(entry.deadline, key);
}

void ListenerGate::heardFrom(Key key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  Entry& entry = it->second;
  (entry.spoke ? spoke_ : neverSpoke_).erase({entry.quietSince, key});
  entry.spoke = true;
  entry.quietSince = Clock::now();
  spoke_.emplace(entry.quietSince, key);
}

void ListenerGate::remove(Key key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  (it->second.spoke ? spoke_ : neverSpoke_).erase({it->second.quietSince, key});
  byDeadline_.erase({it->second.deadline, key});
  entries_.erase(it);
}

void ListenerGate::proven(Key key) { remove(key); }
void ListenerGate::forget(Key key) { remove(key); }

void ListenerGate::dropEntry(Key key, const Drop& drop, const std::string& why) {
  remove(key);
  warn(why);
  drop(key, why);
}

void ListenerGate::dropExpired(const Drop& drop) {
  const Deadline now = Clock::now();
  while (!byDeadline_.empty() && byDeadline_.begin()->first <= now) {
    const Key key = byDeadline_.begin()->second;
    dropEntry(key, drop,
              formatString("closed a connection that did not prove itself within %lld ms",
                           static_cast<long long>(rules_.helloTimeout.count())));
  }
}

ListenerGate::Key ListenerGate::firstToGo() const {
  // The silent ones go first only while they are half of those held or more (half the room, when
  // it is full): fewer, one that has not spoken may be a real rank whose hello is on its way, and
  // the speaker quiet longest (a flood that sent a hello and stopped) goes before it.
  const bool silentFirst = spoke_.empty() || 2 * neverSpoke_.size() >= entries_.size();
  return silentFirst ? neverSpoke_.begin()->second : spoke_.begin()->second;
}

bool ListenerGate::dropLongestSilent(const Drop& drop, const std::string& why) {
  if (entries_.empty()) return false;
  Key key = firstToGo();
  // Bytes waiting unread: it spoke after its owner last read, so it is heard now.
  for (int looked = 0; looked < kMaxUnreadChecks && bytesWaitUnread(entries_.at(key).fd); ++looked) {
    heardFrom(key);
    key = firstToGo();
  }
  dropEntry(key, drop, "closed the connection silent longest: " + why);
  return true;
}

Deadline ListenerGate::nextDeadline() const {
  Deadline next = Deadline::max();
  if (!byDeadline_.empty()) next = byDeadline_.begin()->first;
  if (Clock::now() < pausedUntil_) next = std::min(next, pausedUntil_);
  return next;
}

}  // namespace coll
