// The bootstrap all-gather between the ranks (bootstrap/rank_exchange.h), over a real TCP store
// and real sockets: results against an independent reference for ranks as threads and as
// processes, a rank killed mid-exchange, hostile peers and strangers, and how many store requests
// a rank makes (O(log n), not O(n)).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <atomic>
#include <cmath>
#include <thread>

#include "bootstrap/bootstrap_ops.h"
#include "bootstrap/rank_exchange.h"
#include "bootstrap/tcp_store.h"
#include "common/socket.h"
#include "test_helpers.h"

namespace coll {
namespace bootstrap {
namespace {

using testing::expectCollError;
using testing::in;
using testing::toBytes;

const Secret kSecret = [] {
  Secret s{};
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(0xa5 ^ (i * 7));
  return s;
}();

// Different sizes per rank (one empty) and per call: mixed-up indices or lengths show.
Bytes recordOf(int rank, int call) {
  Bytes b(static_cast<size_t>((rank * 53 + call * 11) % 300), static_cast<uint8_t>(rank * 3 + call));
  if (!b.empty()) b[0] = static_cast<uint8_t>(rank);
  if (b.size() > 1) b[1] = static_cast<uint8_t>(call);
  return b;
}

std::shared_ptr<Store> connect(const TcpStoreServer& server, const Secret& secret = kSecret) {
  return std::make_shared<TcpStoreClient>("127.0.0.1", server.port(), secret, in(10000));
}

// Counts the requests a rank makes of the store, by kind.
class CountingStore : public Store {
 public:
  explicit CountingStore(std::shared_ptr<Store> base) : base_(std::move(base)) {}
  void set(const std::string& key, const Bytes& value) override {
    ++sets;
    base_->set(key, value);
  }
  Bytes get(const std::string& key, Deadline deadline) override {
    ++gets;
    return base_->get(key, deadline);
  }
  int64_t add(const std::string& key, int64_t delta) override {
    ++others;
    return base_->add(key, delta);
  }
  void wait(const std::vector<std::string>& keys, Deadline deadline) override {
    ++others;
    base_->wait(keys, deadline);
  }
  bool check(const std::vector<std::string>& keys) override { return base_->check(keys); }  // timed, not counted
  std::string localAddress() const override { return base_->localAddress(); }
  Secret secret() const override { return base_->secret(); }
  std::atomic<int> sets{0}, gets{0}, others{0};

 private:
  std::shared_ptr<Store> base_;
};

class RankExchangeThreads : public ::testing::TestWithParam<int> {};

TEST_P(RankExchangeThreads, AllGatherMatchesTheReferenceTwiceOverTheSameLinks) {
  const int n = GetParam();
  TcpStoreServer server("127.0.0.1", 0, kSecret);
  std::vector<std::vector<Bytes>> first(n), second(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        RankExchange exchange(connect(server), r, n);
        first[r] = exchange.allGather("peers", recordOf(r, 0), in(30000));
        second[r] = exchange.allGather("setup/net/0", recordOf(r, 1), in(30000));
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(errors[r], "") << "rank " << r;
    ASSERT_EQ(first[r].size(), static_cast<size_t>(n));
    ASSERT_EQ(second[r].size(), static_cast<size_t>(n));
    for (int p = 0; p < n; ++p) {
      EXPECT_EQ(first[r][p], recordOf(p, 0)) << "rank " << r << " peer " << p;
      EXPECT_EQ(second[r][p], recordOf(p, 1)) << "rank " << r << " peer " << p;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, RankExchangeThreads, ::testing::Values(1, 2, 3, 5, 8, 17),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });

// Runs body(rank) in n forked processes against a store in this process; returns each exit status.
// The children start only once the last one is forked: a child forked while the store's thread
// serves its elder siblings could inherit a lock that thread held (an allocator's, under
// AddressSanitizer) and wait on it forever.
std::vector<int> runProcesses(int n, const std::function<int(int)>& body) {
  int go[2];
  if (pipe(go) != 0) return std::vector<int>(static_cast<size_t>(n), -1);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      close(go[1]);
      char start;
      while (read(go[0], &start, 1) < 0 && errno == EINTR) {
      }
      close(go[0]);
      int code = 99;
      try {
        code = body(r);
      } catch (const std::exception& e) {
        fprintf(stderr, "rank %d: %s\n", r, e.what());
        code = 98;
      }
      _exit(code);
    }
    pids.push_back(pid);
  }
  close(go[0]);
  close(go[1]);  // every child's read returns: they start together
  std::vector<int> statuses;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    statuses.push_back(status);
  }
  return statuses;
}

class RankExchangeProcesses : public ::testing::TestWithParam<int> {};

TEST_P(RankExchangeProcesses, AllGatherMatchesTheReference) {
  const int n = GetParam();
  TcpStoreServer server("127.0.0.1", 0, kSecret);
  std::vector<int> statuses = runProcesses(n, [&](int r) {
    RankExchange exchange(connect(server), r, n);
    for (int call = 0; call < 2; ++call) {
      std::vector<Bytes> all = exchange.allGather("g" + std::to_string(call), recordOf(r, call), in(30000));
      if (all.size() != static_cast<size_t>(n)) return 2;
      for (int p = 0; p < n; ++p)
        if (all[p] != recordOf(p, call)) return 3;
    }
    return 0;
  });
  for (int r = 0; r < n; ++r) EXPECT_TRUE(WIFEXITED(statuses[r]) && WEXITSTATUS(statuses[r]) == 0) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Ranks, RankExchangeProcesses, ::testing::Values(1, 2, 3, 5, 8, 17),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });

// Rank 3 dies (SIGKILL) after the first exchange: every survivor's second one ends with
// collRemoteError naming it, within seconds of a 60 s deadline.
TEST(RankExchangeFaults, ARankKilledMidExchangeGivesEverySurvivorAnErrorNamingIt) {
  const int n = 6;
  const int victim = 3;
  TcpStoreServer server("127.0.0.1", 0, kSecret);
  std::vector<int> statuses = runProcesses(n, [&](int r) {
    auto store = connect(server);
    announceDepartureOnClose(*store, "rank " + std::to_string(r) + " (the test's)", r);
    RankExchange exchange(store, r, n);
    exchange.allGather("first", recordOf(r, 0), in(30000));
    if (r == victim) raise(SIGKILL);
    const auto start = Clock::now();
    try {
      exchange.allGather("second", recordOf(r, 1), in(60000));
    } catch (const CollError& e) {
      const bool named = std::string(e.what()).find("rank 3 (the test's) lost its connection") != std::string::npos;
      if (!named) fprintf(stderr, "rank %d: %s\n", r, e.what());
      if (e.code() != collRemoteError || !named) return 4;
      return testing::msSince(start) < 10000 ? 0 : 5;
    }
    return 6;
  });
  for (int r = 0; r < n; ++r) {
    if (r == victim) {
      EXPECT_TRUE(WIFSIGNALED(statuses[r]));
    } else {
      EXPECT_TRUE(WIFEXITED(statuses[r]) && WEXITSTATUS(statuses[r]) == 0) << "rank " << r << " status " << statuses[r];
    }
  }
}

// The listener address rank `rank` published, split into host and port.
void publishedAddress(Store& store, int rank, std::string* host, uint16_t* port, ListenerToken* token) {
  Bytes record = store.get("bootstrap/rank/" + std::to_string(rank), in(10000));
  ASSERT_GT(record.size(), sizeof(ListenerToken));
  std::copy(record.begin(), record.begin() + sizeof(ListenerToken), token->begin());
  ASSERT_TRUE(splitHostPort(std::string(record.begin() + sizeof(ListenerToken), record.end()), host, port));
}

Bytes readSome(int fd, size_t atMost, Deadline deadline) {
  Bytes b(atMost);
  size_t got = 0;
  while (got < atMost) {
    IoStatus s = recvAll(fd, b.data() + got, 1, deadline);
    if (s != IoStatus::kOk) break;
    ++got;
  }
  b.resize(got);
  return b;
}

// Strangers at rank 0's listener, one with the wrong secret and one sending an oversized frame,
// are refused; the ranks' exchange goes on and is right.
TEST(RankExchangeFaults, StrangersAreRefusedAndTheExchangeGoesOn) {
  const int n = 2;
  TcpStoreServer server("127.0.0.1", 0, kSecret);
  auto store0 = connect(server);
  RankExchange rank0(store0, 0, n);
  std::string host;
  uint16_t port = 0;
  ListenerToken token{};
  publishedAddress(*store0, 0, &host, &port, &token);

  // Wrong secret: the listener's challenge does not verify under it, and a proof made with it is
  // answered with a reject and a close.
  Fd wrong = connectWithDeadline(host, port, in(5000));
  wire::Nonce nonce = testing::nonceOf(7);
  Bytes hello = wire::encodeHello(nonce);
  ASSERT_EQ(sendAll(wrong.get(), hello.data(), hello.size(), in(5000)), IoStatus::kOk);
  // Oversized: a length prefix of 2 GiB before any proof.
  Fd huge = connectWithDeadline(host, port, in(5000));
  const uint8_t prefix[] = {0xff, 0xff, 0xff, 0x7f, 1, 2, 3};
  ASSERT_EQ(sendAll(huge.get(), prefix, sizeof(prefix), in(5000)), IoStatus::kOk);

  std::vector<Bytes> all1;
  std::thread rank1([&] { all1 = RankExchange(connect(server), 1, n).allGather("g", recordOf(1, 0), in(20000)); });
  std::thread wrongSecret([&] {
    Bytes challenge = readSome(wrong.get(), wire::kHeaderBytes + wire::kOpAndSeqBytes + 64, in(10000));
    Secret other = kSecret;
    other[0] ^= 1;
    wire::Nonce serverNonce = testing::challengeNonceOf(challenge);
    const Digest256 proof = wire::helloProof(other, wire::ProofRole::kClient, nonce, serverNonce);
    Bytes frame = wire::FrameWriter(wire::Op::kHelloProof, 0).raw(proof.data(), proof.size()).finish();
    sendAll(wrong.get(), frame.data(), frame.size(), in(5000));
  });
  std::vector<Bytes> all0 = rank0.allGather("g", recordOf(0, 0), in(20000));
  rank1.join();
  wrongSecret.join();
  EXPECT_EQ(all0, (std::vector<Bytes>{recordOf(0, 0), recordOf(1, 0)}));
  EXPECT_EQ(all1, all0);
  // Both strangers were closed, and neither was let in: the wrong secret after a reject, or
  // without one when the listener closed first (it closes once every rank has dialled in, and
  // the stranger's proof may still be on its way then); the oversized frame at once.
  Bytes reply = readSome(wrong.get(), 4096, in(5000));
  if (!reply.empty()) {
    ASSERT_GT(reply.size(), wire::kHeaderBytes);
    EXPECT_EQ(reply[wire::kHeaderBytes], static_cast<uint8_t>(wire::Op::kHelloReject));
  }
  uint8_t byte;
  EXPECT_EQ(recvAll(wrong.get(), &byte, 1, in(5000)), IoStatus::kClosed);
  EXPECT_EQ(recvAll(huge.get(), &byte, 1, in(5000)), IoStatus::kClosed);
}

// A "rank 1" whose listener answers rank 0's hello with a frame claiming 2 GiB: rank 0's exchange
// fails with collRemoteError naming rank 1, without buffering it, well before its deadline.
TEST(RankExchangeFaults, APeerSendingAnOversizedFrameIsAnErrorNotACrash) {
  TcpStoreServer server("127.0.0.1", 0, kSecret);
  auto fake = connect(server);
  Fd listener = listenOn("127.0.0.1", 0);
  const std::string address = formatHostPort("127.0.0.1", localAddressOf(listener.get()).port());
  const std::string text = std::string(sizeof(ListenerToken), '\0') + address;  // an all-zero token
  const Bytes record(text.begin(), text.end());
  fake->set("bootstrap/rank/1", record);
  std::thread hostile([&] {
    pollfd pfd{listener.get(), POLLIN, 0};
    ASSERT_EQ(poll(&pfd, 1, 10000), 1);
    Fd conn(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    readSome(conn.get(), wire::kHelloBodyBytes + wire::kHeaderBytes, in(5000));
    const uint8_t prefix[] = {0xff, 0xff, 0xff, 0x7f, 64, 0, 0, 0, 0};
    sendAll(conn.get(), prefix, sizeof(prefix), in(5000));
    uint8_t byte;
    recvAll(conn.get(), &byte, 1, in(5000));  // until rank 0 closes
  });
  const auto start = Clock::now();
  std::string message = expectCollError(
      collRemoteError, [&] { RankExchange(connect(server), 0, 2).allGather("g", recordOf(0, 0), in(30000)); });
  hostile.join();
  EXPECT_LT(testing::msSince(start), 10000);
  EXPECT_NE(message.find("link to rank 1 failed"), std::string::npos) << message;
}

// Per rank: one set (its address) and ceil(log2 n) gets (the addresses it dials), whatever n;
// the store's own all-gather needs n - 1 gets.
TEST(RankExchangeScaling, StoreRequestsPerRankGrowAsLogN) {
  for (int n : {2, 5, 16, 33}) {
    TcpStoreServer server("127.0.0.1", 0, kSecret);
    std::vector<std::shared_ptr<CountingStore>> stores;
    for (int r = 0; r < n; ++r) stores.push_back(std::make_shared<CountingStore>(connect(server)));
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        RankExchange exchange(stores[r], r, n);
        for (int call = 0; call < 3; ++call)
          if (exchange.allGather("c" + std::to_string(call), recordOf(r, call), in(30000))[(r + 1) % n] !=
              recordOf((r + 1) % n, call))
            ++wrong;
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(wrong.load(), 0);
    const int logN = static_cast<int>(std::ceil(std::log2(n)));
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(stores[r]->sets.load(), 1) << n << " ranks, rank " << r;
      EXPECT_EQ(stores[r]->gets.load(), logN) << n << " ranks, rank " << r;
      EXPECT_EQ(stores[r]->others.load(), 0) << n << " ranks, rank " << r;
    }
    // The reference point: the store's all-gather, one get per other rank.
    CountingStore counted(connect(server));
    std::vector<std::thread> others;
    for (int r = 1; r < n; ++r)
      others.emplace_back([&, r] { allGather(*connect(server), "s", r, n, recordOf(r, 0), in(30000)); });
    allGather(counted, "s", 0, n, recordOf(0, 0), in(30000));
    for (auto& t : others) t.join();
    EXPECT_EQ(counted.gets.load(), n - 1);
  }
}

TEST(RankExchangeScaling, RejectsARankOutsideTheGroup) {
  TcpStoreServer server("127.0.0.1", 0, kSecret);
  expectCollError(collInvalidArgument, [&] { RankExchange(connect(server), 4, 4); });
  expectCollError(collInvalidArgument, [&] { RankExchange(connect(server), -1, 4); });
}

}  // namespace
}  // namespace bootstrap
}  // namespace coll
