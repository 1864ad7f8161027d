// Floods of silent connections against the bootstrap's listeners while a real job uses them: the
// rendezvous store under the usual descriptor limit of 1024 (silent, and sending a hello and then
// nothing), and each rank's bootstrap listener during the all-gather between the ranks. The flood
// (tests/common/connection_flood.h) re-opens every connection the listener closes, as a stranger
// would. The real ranks must get through, and the listeners' warnings stay a few lines. (The socket
// transport's listener has its flood test in tests/transport/test_net_flood.cc.)
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/rank_exchange.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/tcp_store.h"
#include "common/socket.h"
#include "test_helpers.h"
#include "tests/common/connection_flood.h"

namespace coll {
namespace bootstrap {
namespace {

using testing::in;
using testing::msSince;
using testing::toBytes;
using testing::toString;

const Secret kSecret = [] {
  Secret s{};
  s.fill(0x5c);
  return s;
}();

size_t linesContaining(const std::string& text, const std::string& what) {
  size_t lines = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines += line.find(what) != std::string::npos ? 1 : 0;
  return lines;
}

// A store in a child process whose descriptor limit is 1024, soft and hard (what most systems
// give a process), its warnings written to a file.
class StoreUnderTheUsualLimit {
 public:
  StoreUnderTheUsualLimit() {
    char path[] = "/tmp/coll-store-flood-XXXXXX";
    const int log = mkstemp(path);
    logPath_ = path;
    int portPipe[2];
    if (log < 0 || pipe(portPipe) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      rlimit limit{1024, 1024};
      if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(2);
      dup2(log, 2);
      TcpStoreServer server("127.0.0.1", 0, kSecret);
      const uint16_t port = server.port();
      if (write(portPipe[1], &port, sizeof(port)) != sizeof(port)) _exit(3);
      for (;;) pause();
    }
    close(log);
    close(portPipe[1]);
    if (read(portPipe[0], &port_, sizeof(port_)) != sizeof(port_)) port_ = 0;
    close(portPipe[0]);
  }
  ~StoreUnderTheUsualLimit() {
    stop();
    unlink(logPath_.c_str());
  }
  uint16_t port() const { return port_; }
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  std::string log() const {
    std::ifstream file(logPath_);
    return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  }

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string logPath_;
};

// A real rank's client connects, writes its card and reads it back; "" when all went well.
std::string realClientRound(uint16_t port) {
  try {
    TcpStoreClient real("127.0.0.1", port, kSecret, in(30000));
    real.set("card", toBytes("rank 1"));
    const std::string card = toString(real.get("card", in(10000)));
    return card == "rank 1" ? "" : "read back '" + card + "'";
  } catch (const CollError& e) {
    return e.what();
  }
}

// 5,000 silent connections, re-opened as the store closes them, against a store that may hold
// 1024 descriptors (before: accept() failed with EMFILE under the flood, a line said so each time,
// and a real rank stayed out for tens of seconds). The store keeps its unproven connections to a
// quarter of the limit, each new connection closing the one silent longest, so the real rank,
// which speaks at once, gets in.
TEST(ListenerFloods, TheStoreUnderTheUsualDescriptorLimitLetsARealRankIn) {
  StoreUnderTheUsualLimit store;
  ASSERT_NE(store.port(), 0) << "the store's child did not start";
  colltest::ConnectionFlood flood("127.0.0.1", store.port(), 5000);
  ASSERT_TRUE(flood.waitForOpened(2000, 30)) << "the flood did not get going";
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto start = Clock::now();
  const std::string error = realClientRound(store.port());
  const long long waited = msSince(start);
  const uint64_t closedByTheStore = flood.counters().closed.load();
  flood.stop();
  store.stop();
  EXPECT_EQ(error, "") << "the real rank did not get in";
  EXPECT_LT(waited, 10000) << "the real rank waited " << waited << " ms";
  EXPECT_GT(closedByTheStore, 0u) << "the store never closed a silent connection";
  const std::string log = store.log();
  printf(
      "the real rank got in after %lld ms; the flood opened %llu connections, the store closed %llu; %zu log lines\n",
      waited, static_cast<unsigned long long>(flood.counters().opened.load()),
      static_cast<unsigned long long>(closedByTheStore), linesContaining(log, "[coll WARN]"));
  EXPECT_LE(linesContaining(log, "[coll WARN]"), 40u) << log.substr(0, 3000);
  EXPECT_EQ(linesContaining(log, "Too many open files"), 0u) << log.substr(0, 3000);
}

// How real ranks fared against a flood: attempts that the store closed before the rank's
// challenge (its hello late) and after it (the flood turned the room over while the rank
// computed its proof).
struct ShutOut {
  int beforeChallenge = 0;
  int afterHello = 0;
};

// A real rank that speaks the store's handshake by hand, its hello `lateMs` after its connect (as
// a rank descheduled between the two would); "" when the store let it in. Shut out, it connects
// again until its deadline, as the library's store client does (tcp_store_client.cc), and
// *shutOut counts the attempts that ended so.
std::string lateHelloHandshake(uint16_t port, int lateMs, ShutOut* shutOut) {
  const Deadline end = in(10000);
  for (;;) {
    try {
      Fd fd = connectWithDeadline("127.0.0.1", port, end);
      std::this_thread::sleep_for(std::chrono::milliseconds(lateMs));
      const wire::Nonce clientNonce = testing::nonceOf(9);
      const Bytes hello = wire::encodeHello(clientNonce);
      if (sendAll(fd.get(), hello.data(), hello.size(), in(5000)) != IoStatus::kOk) return "the hello was not sent";
      Bytes challenge(wire::kHeaderBytes + wire::kOpAndSeqBytes + 64);
      if (recvAll(fd.get(), challenge.data(), challenge.size(), in(5000)) != IoStatus::kOk) {
        ++shutOut->beforeChallenge;
        if (Clock::now() >= end) return "the store closed the connection before its challenge, every time";
        continue;
      }
      const Bytes proof = testing::proofFrameFor(challenge, kSecret, clientNonce);
      if (sendAll(fd.get(), proof.data(), proof.size(), in(5000)) != IoStatus::kOk) return "the proof was not sent";
      uint8_t reply[wire::kHeaderBytes + wire::kOpAndSeqBytes];
      if (recvAll(fd.get(), reply, sizeof(reply), in(5000)) != IoStatus::kOk) {
        ++shutOut->afterHello;
        if (Clock::now() >= end) return "the store closed the connection before its answer to the proof, every time";
        continue;
      }
      if (reply[wire::kHeaderBytes] != static_cast<uint8_t>(wire::Op::kHelloOk)) return "the proof was refused";
    } catch (const CollError& e) {
      return e.what();
    }
    return "";
  }
}

// 1,000 connections that each send a well-formed hello (no secret needed) and then nothing,
// re-opened as the store closes them, against a store with room for 256 unproven connections:
// real ranks whose hello is 2 ms late, and a real client, must get in (connecting again where
// they were shut out, as the library's client does), and hardly ever be shut out before their
// hello was heard. Before, a connection that had not spoken went first, so the flood's next
// connection closed a real rank's whose hello had not arrived yet.
TEST(ListenerFloods, HellosThenSilenceAgainstTheStoreLetRealRanksIn) {
  StoreUnderTheUsualLimit store;
  ASSERT_NE(store.port(), 0) << "the store's child did not start";
  const Bytes hello = wire::encodeHello(testing::nonceOf(1));
  colltest::ConnectionFlood flood("127.0.0.1", store.port(), 1000, std::vector<uint8_t>(hello.begin(), hello.end()));
  ASSERT_TRUE(flood.waitForOpened(2000, 30)) << "the flood did not get going";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const uint64_t closedBefore = flood.counters().closed.load();
  const auto start = Clock::now();
  constexpr int kLateRanks = 5;
  std::vector<std::string> lateErrors;
  ShutOut shutOut;
  for (int i = 0; i < kLateRanks; ++i) lateErrors.push_back(lateHelloHandshake(store.port(), 2, &shutOut));
  const std::string error = realClientRound(store.port());
  const long long waited = msSince(start);
  const uint64_t closed = flood.counters().closed.load();
  flood.stop();
  store.stop();
  printf(
      "the store closed %llu of the flood's connections, %llu of them in the %lld ms the real ranks took; it "
      "closed %d of the real ranks' attempts before their challenge, %d after their hello\n",
      static_cast<unsigned long long>(closed), static_cast<unsigned long long>(closed - closedBefore), waited,
      shutOut.beforeChallenge, shutOut.afterHello);
  for (int i = 0; i < kLateRanks; ++i) EXPECT_EQ(lateErrors[i], "") << "real rank " << i << ", its hello 2 ms late";
  // The rule under test: a rank whose hello is on its way is not what makes room. The old rule
  // shut out 4 or 5 of the 5 before their challenge in each run; now it happens only where the
  // machine is so loaded that a rank's hello comes long after its accept (beside two busy loops on 2
  // cores: 2 runs in 20 had one rank so, 1 run in 20 two).
  EXPECT_LE(shutOut.beforeChallenge, 2) << "real ranks shut out before their hello was heard";
  EXPECT_EQ(error, "") << "the real client did not get in";
  EXPECT_GT(closed, 0u) << "the flood did not press on the room";
  EXPECT_EQ(linesContaining(store.log(), "Too many open files"), 0u);
}

// Where rank `rank` of the exchange listens, from the store.
void listenerOf(Store& store, int rank, std::string* host, uint16_t* port) {
  const Bytes record = store.get("bootstrap/rank/" + std::to_string(rank), in(10000));
  ASSERT_GT(record.size(), sizeof(ListenerToken));
  ASSERT_TRUE(splitHostPort(std::string(record.begin() + sizeof(ListenerToken), record.end()), host, port));
}

// Both ranks' bootstrap listeners flooded with 200 silent connections each, re-opened as closed,
// before the ranks dial each other (before: 64 silent connections took every place, the real
// peer's connection was refused, and both ranks failed init, each blaming the other).
TEST(ListenerFloods, TheBootstrapListenersOfARealExchangeLetTheRealPeersIn) {
  constexpr int kRanks = 2;
  TcpStoreServer server("127.0.0.1", 0, kSecret);
  std::vector<std::unique_ptr<RankExchange>> exchanges(kRanks);
  for (int r = 0; r < kRanks; ++r)
    exchanges[r] = std::make_unique<RankExchange>(
        std::make_shared<TcpStoreClient>("127.0.0.1", server.port(), kSecret, in(10000)), r, kRanks);
  TcpStoreClient watcher("127.0.0.1", server.port(), kSecret, in(10000));
  std::vector<std::unique_ptr<colltest::ConnectionFlood>> floods;
  for (int r = 0; r < kRanks; ++r) {
    std::string host;
    uint16_t port = 0;
    listenerOf(watcher, r, &host, &port);
    floods.push_back(std::make_unique<colltest::ConnectionFlood>(host, port, 200));
  }
  for (auto& flood : floods) ASSERT_TRUE(flood->waitForOpened(200, 30)) << "the flood did not get going";
  ::testing::internal::CaptureStderr();
  std::vector<std::string> errors(kRanks);
  std::vector<std::vector<Bytes>> gathered(kRanks);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      try {
        gathered[r] = exchanges[r]->allGather("peers", toBytes("rank " + std::to_string(r)), in(30000));
      } catch (const CollError& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& rank : ranks) rank.join();
  uint64_t closed = 0;
  for (auto& flood : floods) {
    closed += flood->counters().closed.load();
    flood->stop();
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  printf("the listeners closed %llu silent connections; %zu log lines\n", static_cast<unsigned long long>(closed),
         linesContaining(log, "[coll WARN]"));
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    EXPECT_EQ(gathered[r], (std::vector<Bytes>{toBytes("rank 0"), toBytes("rank 1")})) << "rank " << r;
  }
  EXPECT_GT(closed, 0u) << "the listeners never closed a silent connection";
  EXPECT_LE(linesContaining(log, "[coll WARN]"), 2u * 22u) << log.substr(0, 3000);
}

}  // namespace
}  // namespace bootstrap
}  // namespace coll
