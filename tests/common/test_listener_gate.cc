// The rules every listener applies to connections not yet proven (common/listener_gate.h), on
// real sockets over loopback: which connection makes room, the hello deadline, the room sized
// from the descriptor limit (and that limit raised), a listener out of descriptors, and the
// warnings' rate limit. The floods against each real listener are in tests/bootstrap and
// tests/transport (test_listener_floods.cc, test_net_flood.cc).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <thread>
#include <vector>

#include "common/fd_limit.h"
#include "common/listener_gate.h"
#include "common/socket.h"

namespace coll {
namespace {

Deadline in(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

// A listener on loopback and the connections its gate let in, by key.
class GatedListener {
 public:
  explicit GatedListener(GateRules rules)
      : listener_(listenOn("127.0.0.1", 0)), gate_("test listener", LogSubsys::kBootstrap, rules) {}
  uint16_t port() const { return localAddressOf(listener_.get()).port(); }
  Fd dial() { return connectWithDeadline("127.0.0.1", port(), in(2000)); }
  // Accepts until `count` connections were taken or 2 s passed.
  void accept(size_t count) {
    const Deadline end = in(2000);
    const size_t target = taken_ + count;
    while (taken_ < target && Clock::now() < end) {
      gate_.acceptPending(listener_.get(), take_, drop_);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ListenerGate& gate() { return gate_; }
  bool open(ListenerGate::Key key) const { return open_.count(key) != 0; }
  const std::vector<ListenerGate::Key>& dropped() const { return dropped_; }

 private:
  Fd listener_;
  ListenerGate gate_;
  size_t taken_ = 0;
  ListenerGate::Key next_ = 1;
  std::map<ListenerGate::Key, Fd> open_;
  std::vector<ListenerGate::Key> dropped_;
  const ListenerGate::Take take_ = [this](Fd& fd, const SocketAddress&) -> std::optional<ListenerGate::Key> {
    ++taken_;
    open_[next_] = std::move(fd);
    return next_++;
  };
  const ListenerGate::Drop drop_ = [this](ListenerGate::Key key, const std::string&) {
    open_.erase(key);
    dropped_.push_back(key);
  };

 public:
  const ListenerGate::Drop& drop() const { return drop_; }
};

// A silent flood: while connections that never spoke hold half the room, the oldest of them goes,
// never a speaker, however long it has been quiet since (a real rank waiting on the handshake).
TEST(ListenerGate, ANewConnectionPushesOutTheOldestSilentOneAndSpeakersGoLast) {
  GatedListener listener(GateRules{4, std::chrono::seconds(10)});
  ASSERT_EQ(listener.gate().capacity(), 4u);
  std::vector<Fd> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(listener.dial());
    listener.accept(1);
  }
  // Key 1 speaks (a real peer's hello): it is no longer the first to go, though the oldest.
  listener.gate().heardFrom(1);
  clients.push_back(listener.dial());
  listener.accept(1);
  EXPECT_EQ(listener.dropped(), std::vector<ListenerGate::Key>{2});
  // One that was sending before it was accepted counts as having spoken at once.
  clients.push_back(listener.dial());
  const char hello = 'h';
  ASSERT_EQ(send(clients.back().get(), &hello, 1, 0), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  listener.accept(1);
  EXPECT_EQ(listener.dropped(), (std::vector<ListenerGate::Key>{2, 3}));
  // Keys 4 and 5 have not spoken, half the room: the older goes, not speaker 1, quiet longer.
  clients.push_back(listener.dial());
  listener.accept(1);
  EXPECT_EQ(listener.dropped(), (std::vector<ListenerGate::Key>{2, 3, 4}));
  EXPECT_TRUE(listener.open(1));
  // A proven connection is no longer the gate's business.
  listener.gate().proven(6);
  EXPECT_EQ(listener.gate().unproven(), 3u);
  EXPECT_TRUE(listener.open(6));
}

// Among connections that spoke, the one quiet longest since its last byte goes.
TEST(ListenerGate, AmongSpeakersTheOneQuietLongestGoes) {
  GatedListener listener(GateRules{3, std::chrono::seconds(10)});
  std::vector<Fd> clients;
  for (ListenerGate::Key key : {1, 2, 3}) {
    clients.push_back(listener.dial());
    listener.accept(1);
    listener.gate().heardFrom(key);
  }
  listener.gate().heardFrom(1);
  clients.push_back(listener.dial());
  listener.accept(1);
  EXPECT_EQ(listener.dropped(), std::vector<ListenerGate::Key>{2});
}

// A flood that sends a hello and then nothing, while a real rank's hello has not arrived yet: the
// flood's connections go, quiet longest first, and the real rank's stays (before: a connection
// that never spoke went first, so the flood's next connection closed the real rank's, whatever
// the flood's pace).
TEST(ListenerGate, HellosThenSilenceDoNotPushOutARankWhoseHelloIsOnItsWay) {
  GatedListener listener(GateRules{3, std::chrono::seconds(10)});
  std::vector<Fd> clients;
  for (ListenerGate::Key flooder : {1, 2}) {
    clients.push_back(listener.dial());
    listener.accept(1);
    listener.gate().heardFrom(flooder);
  }
  const ListenerGate::Key realRank = 3;
  clients.push_back(listener.dial());
  listener.accept(1);
  for (ListenerGate::Key flooder : {4, 5, 6}) {
    clients.push_back(listener.dial());
    listener.accept(1);
    listener.gate().heardFrom(flooder);
  }
  EXPECT_EQ(listener.dropped(), (std::vector<ListenerGate::Key>{1, 2, 4}));
  ASSERT_TRUE(listener.open(realRank)) << "the real rank was pushed out before its hello arrived";
  // Its hello arrives, and it proves itself.
  listener.gate().heardFrom(realRank);
  listener.gate().proven(realRank);
  EXPECT_TRUE(listener.open(realRank));
  EXPECT_EQ(listener.gate().unproven(), 2u);
}

// A real rank's next message (its proof) waits unread while the owner is busy accepting a flood of
// hellos: by the time the room is full, the rank is the speaker its owner heard from longest ago.
// Its unread bytes say it spoke since, so a hello-then-silent flooder goes instead.
TEST(ListenerGate, ASpeakerWhoseBytesWaitUnreadIsNotTakenForQuiet) {
  GatedListener listener(GateRules{3, std::chrono::seconds(10)});
  std::vector<Fd> clients;
  const ListenerGate::Key realRank = 1;
  clients.push_back(listener.dial());
  listener.accept(1);
  listener.gate().heardFrom(realRank);  // its hello, read by the owner
  for (ListenerGate::Key flooder : {2, 3}) {
    clients.push_back(listener.dial());
    listener.accept(1);
    listener.gate().heardFrom(flooder);
  }
  // Its proof arrives; the owner has not read it yet.
  const char proof = 'p';
  ASSERT_EQ(send(clients[0].get(), &proof, 1, MSG_NOSIGNAL), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  clients.push_back(listener.dial());
  listener.accept(1);
  EXPECT_EQ(listener.dropped(), std::vector<ListenerGate::Key>{2});
  EXPECT_TRUE(listener.open(realRank)) << "the real rank was pushed out with its proof waiting unread";
}

TEST(ListenerGate, AConnectionThatDoesNotProveItselfInTimeIsClosed) {
  GatedListener listener(GateRules{8, std::chrono::milliseconds(200)});
  Fd silent = listener.dial();
  listener.accept(1);
  listener.gate().dropExpired(listener.drop());
  EXPECT_TRUE(listener.dropped().empty());
  EXPECT_LE(listener.gate().nextDeadline(), in(200));
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  listener.gate().dropExpired(listener.drop());
  EXPECT_EQ(listener.dropped(), std::vector<ListenerGate::Key>{1});
  EXPECT_EQ(listener.gate().nextDeadline(), Deadline::max());
}

// Runs `body` in a forked child; the child's exit status is 0 when it passed (gtest assertions do
// not cross the fork: the body returns what went wrong, "" for nothing).
void inChild(const std::function<std::string()>& body) {
  int pipeFds[2];
  ASSERT_EQ(pipe(pipeFds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    const std::string error = body();
    if (!error.empty() && write(pipeFds[1], error.data(), error.size()) < 0) _exit(2);
    _exit(error.empty() ? 0 : 1);
  }
  close(pipeFds[1]);
  char text[512] = {};
  const ssize_t got = read(pipeFds[0], text, sizeof(text) - 1);
  close(pipeFds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << (got > 0 ? text : "the child failed");
}

// Under a soft limit of 1024 with a higher hard limit (before: the limit stayed 1024, and a flood
// used every descriptor before any slot limit applied), the first listener raises the soft limit;
// where the hard limit is 1024 too, the room for unproven connections is a quarter of it.
TEST(ListenerGate, TheSoftDescriptorLimitIsRaisedAndTheRoomFollowsTheLimit) {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max <= 1024)
    GTEST_SKIP() << "SKIPPED: the hard descriptor limit is " << limit.rlim_max << ", nothing to raise";
  inChild([&] {
    rlimit low{1024, limit.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &low) != 0) return std::string("setrlimit failed");
    ListenerGate gate("test listener", LogSubsys::kBootstrap, GateRules{100000, std::chrono::seconds(5)});
    const size_t expected =
        std::min<size_t>(limit.rlim_max == RLIM_INFINITY ? kWantedOpenFiles : limit.rlim_max, kWantedOpenFiles);
    if (openFileLimit() != expected)
      return "the soft limit is " + std::to_string(openFileLimit()) + ", expected " + std::to_string(expected);
    if (gate.capacity() != expected / 4) return "room " + std::to_string(gate.capacity());
    return std::string();
  });
  inChild([] {
    rlimit low{1024, 1024};
    if (setrlimit(RLIMIT_NOFILE, &low) != 0) return std::string("setrlimit failed");
    ListenerGate gate("test listener", LogSubsys::kBootstrap, GateRules{4096, std::chrono::seconds(5)});
    if (openFileLimit() != 1024) return "the soft limit is " + std::to_string(openFileLimit());
    if (gate.capacity() != 256) return "room " + std::to_string(gate.capacity()) + ", expected 256";
    return std::string();
  });
}

// accept() finds no descriptor (every one is taken): the longest-silent unproven connection gives
// its own up and the new connection is accepted (before: accept() failed until the flood's
// connections timed out).
TEST(ListenerGate, OutOfDescriptorsTheLongestSilentConnectionGivesItsOwnUp) {
  inChild([] {
    rlimit low{256, 256};
    if (setrlimit(RLIMIT_NOFILE, &low) != 0) return std::string("setrlimit failed");
    GatedListener listener(GateRules{64, std::chrono::seconds(10)});
    std::vector<Fd> clients;
    for (int i = 0; i < 3; ++i) {
      clients.push_back(listener.dial());
      listener.accept(1);
    }
    listener.gate().heardFrom(1);
    clients.push_back(listener.dial());  // waits in the backlog
    // Take every descriptor left.
    std::vector<Fd> filler;
    for (;;) {
      Fd fd(dup(0));
      if (!fd.valid()) break;
      filler.push_back(std::move(fd));
    }
    listener.accept(1);
    if (listener.dropped() != std::vector<ListenerGate::Key>{2})
      return "dropped " + std::to_string(listener.dropped().size()) + " connections (first " +
             std::to_string(listener.dropped()[0]) + ", last " + std::to_string(listener.dropped().back()) +
             "), expected key 2 alone";
    if (!listener.open(4)) return std::string("the new connection was not accepted");
    return std::string();
  });
}

TEST(WarningLimiter, AFewLinesPerIntervalThenOneLineCountingTheRest) {
  WarningLimiter limiter(LogSubsys::kBootstrap, 3, std::chrono::seconds(1));
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 50; ++i) limiter.warn("test listener", "closed connection " + std::to_string(i));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  limiter.warn("test listener", "closed connection 50");
  const std::string log = ::testing::internal::GetCapturedStderr();
  size_t lines = 0;
  for (size_t at = log.find("test listener"); at != std::string::npos; at = log.find("test listener", at + 1)) ++lines;
  EXPECT_EQ(lines, 5u) << log;
  EXPECT_NE(log.find("47 more such warnings in the last 1 s were not printed"), std::string::npos) << log;
  EXPECT_NE(log.find("further warnings in this interval are counted"), std::string::npos) << log;
}

}  // namespace
}  // namespace coll
