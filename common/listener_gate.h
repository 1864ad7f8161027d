// The rules every listening socket of the library applies to the connections it accepts until
// they prove they belong to the job: the rendezvous store (bootstrap/tcp_store_server.cc), the
// ranks' bootstrap listener (bootstrap/rank_exchange.cc) and the socket transport's listener
// (transport/net/net_connector.cc). Anyone who can reach a listening port can open connections
// and never speak; these rules make that cost the stranger its own connections, never a real
// rank's place (docs/security.md):
//
//   - a hello deadline: a connection not proven within helloTimeout of its accept is closed;
//   - bounded room: at most capacity() unproven connections at once, a number kept well below the
//     descriptor limit (fd_limit.h); when they are all taken, a new connection first closes one.
//     While connections that never sent a byte are half of those held or more (half the room, when
//     it is full), the oldest of them goes: a silent flood never pushes out a real rank that spoke
//     (it sends its hello at once). Otherwise the one quiet longest among those that spoke goes: a
//     flood that sends a hello and then nothing competes with real ranks in the middle of their
//     handshake, never with one whose hello has not arrived yet. A candidate whose bytes wait
//     unread in its socket has spoken since its owner last read (a real rank's next message while
//     the owner is busy accepting the flood): it counts as heard now, and the next one is looked
//     at. When accept() itself runs out of descriptors, the connection chosen the same way gives
//     its own up;
//   - rate-limited warnings: a flood costs the log a few lines per interval and one count.
//
// The gate does not own the connections. Its owner files each accepted socket under a key of its
// own choosing (Take) and closes it when the gate says so (Drop); it tells the gate when bytes
// arrive on one (heardFrom), when one proved itself (proven) and when it closed one itself
// (forget). Single-threaded: the owner's one thread calls it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/fd.h"
#include "common/logging.h"
#include "common/socket.h"

namespace coll {

// At most `perInterval` lines per `interval`; the first line after an interval in which some were
// left out says how many.
class WarningLimiter {
 public:
  WarningLimiter(LogSubsys subsys, int perInterval = 10, std::chrono::seconds interval = std::chrono::seconds(10))
      : subsys_(subsys), perInterval_(perInterval), interval_(interval) {}
  // Logs "<prefix>: <what>" at WARN unless this interval had its share.
  void warn(const std::string& prefix, const std::string& what);

 private:
  LogSubsys subsys_;
  int perInterval_;
  std::chrono::seconds interval_;
  Deadline intervalEnd_{};
  int printed_ = 0;
  int suppressed_ = 0;
};

struct GateRules {
  size_t maxUnproven = 1024;  // the room wanted; the descriptor limit may make it smaller
  std::chrono::milliseconds helloTimeout{5000};
};

class ListenerGate {
 public:
  using Key = uint64_t;
  // Files the accepted socket (moving it out of `fd`) and returns its key; std::nullopt when the
  // owner will not keep it (the socket closes).
  using Take = std::function<std::optional<Key>(Fd& fd, const SocketAddress& from)>;
  // Closes the connection filed under `key` before returning (its descriptor may be needed at
  // once); `why` is for the owner's messages, the gate has already warned.
  using Drop = std::function<void(Key key, const std::string& why)>;

  // `name` begins every warning ("rendezvous store 10.0.0.1:29500"). Raises the descriptor limit
  // (fd_limit.h) and sizes the room from it.
  ListenerGate(std::string name, LogSubsys subsys, GateRules rules);

  // Accepts what waits on `listenFd` (a bounded batch, so that every connection accepted is read
  // at least once before later ones could push it out), making room first when needed.
  void acceptPending(int listenFd, const Take& take, const Drop& drop);
  // `listenFd`, or -1 while accepting pauses after accept() found no descriptor to take.
  int listenerToPoll(int listenFd) const;

  void heardFrom(Key key);
  void proven(Key key);
  void forget(Key key);
  // Drops every unproven connection whose hello deadline passed.
  void dropExpired(const Drop& drop);
  // Drops the unproven connection that goes first (above); false when there is none.
  bool dropLongestSilent(const Drop& drop, const std::string& why);

  // The earliest hello deadline or the end of an accept pause (Deadline::max() when none).
  Deadline nextDeadline() const;
  size_t unproven() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }
  std::chrono::milliseconds helloTimeout() const { return rules_.helloTimeout; }
  const std::string& name() const { return name_; }
  // A rate-limited WARN line, prefixed with the gate's name.
  void warn(const std::string& what) { warnings_.warn(name_, what); }

 private:
  struct Entry {
    Deadline deadline;
    bool spoke = false;
    Deadline quietSince;  // its last byte, or its accept while it sent none
    int fd = -1;          // its socket, to look for bytes its owner has not read yet
  };
  void admit(Key key, bool spoke, int fd);
  // The connection the rule above makes go first (entries_ not empty).
  Key firstToGo() const;
  void remove(Key key);
  void dropEntry(Key key, const Drop& drop, const std::string& why);
  // accept() failed for want of a descriptor (or anything else): frees the longest-silent one when
  // a connection waits, or pauses. False to stop the batch.
  bool outOfDescriptors(int listenFd, int error, const Drop& drop);

  std::string name_;
  GateRules rules_;
  size_t capacity_;
  std::unordered_map<Key, Entry> entries_;
  std::set<std::pair<Deadline, Key>> neverSpoke_;  // those that sent nothing, by accept
  std::set<std::pair<Deadline, Key>> spoke_;       // the others, quiet longest first
  std::set<std::pair<Deadline, Key>> byDeadline_;
  Deadline pausedUntil_{};
  WarningLimiter warnings_;
};

}  // namespace coll
