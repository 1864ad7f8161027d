// Faults end in errors on every surviving rank within the timeout, never in a hang: a rank killed
// in the middle of a collective, a rendezvous that never completes, collCommAbort from another
// thread, and a second job that presents the wrong secret.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bootstrap/tcp_store.h"
#include "bootstrap/unique_id.h"
#include "collective.h"
#include "rank_launcher.h"
#include "refuse_pidfds.h"

namespace colltest {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

constexpr int kKilledRanks = 4;
constexpr int kVictim = 2;

// Every rank all-reduces 16 Mi floats in a loop (which keeps every rank inside the collective when
// the victim dies); the victim kills itself after 300 ms. Each survivor must get collRemoteError
// within 10 s, fail the next call at once and record an async error.
std::vector<std::string> allReduceUntilTheVictimDies(collComm_t comm, int rank, int) {
  std::vector<float> in(16 << 20, 1.0f), out(16 << 20);
  if (rank == kVictim) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      kill(getpid(), SIGKILL);
    }).detach();
  }
  auto start = Clock::now();
  for (int i = 0; i < 100000; ++i) {
    collResult_t rc = collAllReduce(in.data(), out.data(), in.size(), collFloat, collSum, comm, nullptr);
    if (rc != collSuccess) {
      double elapsed = secondsSince(start);
      std::string message = collGetLastError(comm);
      if (rc != collRemoteError)
        return {"rank " + std::to_string(rank) + ": expected collRemoteError, got " + collGetErrorString(rc)};
      if (elapsed > 10)
        return {"rank " + std::to_string(rank) + ": error came after " + std::to_string(elapsed) + " s"};
      // The next call fails at once: the communicator remembers.
      if (collAllReduce(in.data(), out.data(), 8, collFloat, collSum, comm, nullptr) == collSuccess)
        return {"rank " + std::to_string(rank) + ": call after the failure succeeded"};
      collResult_t async = collSuccess;
      collCommGetAsyncError(comm, &async);
      if (async == collSuccess) return {"rank " + std::to_string(rank) + ": no async error recorded"};
      return {};
    }
  }
  return {"rank " + std::to_string(rank) + ": never saw the victim die"};
}

// The victim's own report is "exited abnormally"; every other rank must pass.
std::vector<std::string> survivorsFailures(const std::vector<std::string>& failures) {
  std::vector<std::string> survivors;
  for (const auto& f : failures)
    if (f.find("rank " + std::to_string(kVictim) + " ") != 0) survivors.push_back(f);
  return survivors;
}

TEST(Faults, RankKilledMidCollectiveGivesEverySurvivorAnError) {
  auto failures = runAsProcesses(kKilledRanks, allReduceUntilTheVictimDies, 60);
  auto survivors = survivorsFailures(failures);
  EXPECT_TRUE(survivors.empty()) << joinFailures(survivors);
}

// The same where the kernel refuses pidfd_open and pidfd_getfd, as before Linux 5.6 or under a
// container's seccomp profile (here a real seccomp filter in each rank, answering ENOSYS): the
// ranks agree on named segments, and learn of a dead local peer without its pidfd.
TEST(Faults, RankKilledWhereTheKernelRefusesPidfdsGivesEverySurvivorAnError) {
  std::string why;
  if (!canRefusePidfdCalls(&why)) GTEST_SKIP() << why;
  auto failures = runAsProcessesWithSetup(
      kKilledRanks, [](int) { refusePidfdCalls(); }, allReduceUntilTheVictimDies, initMustSucceed(), 60);
  auto survivors = survivorsFailures(failures);
  EXPECT_TRUE(survivors.empty()) << joinFailures(survivors);
}

TEST(Faults, RankThatFinishesAndExitsIsNotTakenForDead) {
  // A binomial reduce to rank 1: rank 0 sends its part, destroys its communicator and exits while
  // the root still waits for the late rank 2. The root must not report rank 0 as dead.
  auto failures = runAsProcessesWithSetup(
      3, [](int) { setenv("COLL_ALGO", "reduce:tree", 1); },
      [](collComm_t comm, int rank, int) -> std::vector<std::string> {
        std::vector<float> in(1024, 1.0f + rank), out(1024, 0.0f);
        if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(300));
        collResult_t rc = collReduce(in.data(), out.data(), in.size(), collFloat, collSum, 1, comm, nullptr);
        if (rc != collSuccess) return {"rank " + std::to_string(rank) + ": " + collGetLastError(comm)};
        if (rank == 1 && out[0] != 6.0f) return {"root got " + std::to_string(out[0])};
        return {};
      },
      initMustSucceed());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST(Faults, RendezvousThatNeverCompletesTimesOut) {
  collUniqueId id;
  ASSERT_EQ(collGetUniqueId(&id), collSuccess);
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = 1000;
  collComm_t comm = nullptr;
  auto start = Clock::now();
  // Rank 1 of 2 never arrives.
  EXPECT_EQ(collCommInitRankConfig(&comm, 2, id, 0, &config), collTimeout);
  double elapsed = secondsSince(start);
  EXPECT_GE(elapsed, 0.9);
  EXPECT_LT(elapsed, 5.0);
  EXPECT_NE(std::string(collGetLastError(nullptr)).find("collCommInitRank"), std::string::npos);
}

// A rank that dies during init: its peers hear of it within about a second (the store announces
// its lost connection), not at the init deadline (60 s here (design value); before, they waited all
// of it).
TEST(Faults, RankThatDiesDuringInitGivesItsPeersAnErrorWithinSeconds) {
  int idPipe[2];
  ASSERT_EQ(pipe(idPipe), 0);
  // The child is forked before this process starts the id's server thread (fork safety).
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(idPipe[1]);
    collUniqueId id;
    if (read(idPipe[0], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) _exit(3);
    collConfig_t config = COLL_CONFIG_INITIALIZER;
    config.timeoutMs = 60000;
    collComm_t comm = nullptr;
    // Rank 1 never comes: this rank waits inside init until the parent kills it.
    collCommInitRankConfig(&comm, 3, id, 2, &config);
    _exit(4);
  }
  close(idPipe[0]);
  collUniqueId id;
  ASSERT_EQ(collGetUniqueId(&id), collSuccess);
  ASSERT_EQ(write(idPipe[1], &id, sizeof(id)), static_cast<ssize_t>(sizeof(id)));
  close(idPipe[1]);
  std::thread killer([child] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    kill(child, SIGKILL);
  });
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = 60000;
  collComm_t comm = nullptr;
  auto start = Clock::now();
  collResult_t rc = collCommInitRankConfig(&comm, 3, id, 0, &config);
  const double elapsed = secondsSince(start);
  const std::string message = collGetLastError(nullptr);
  killer.join();
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(rc, collRemoteError) << message;
  EXPECT_LT(elapsed, 5.0) << message;
  EXPECT_NE(message.find("rank 2 (pid " + std::to_string(child)), std::string::npos) << message;
  EXPECT_NE(message.find("lost its connection to the rendezvous store"), std::string::npos) << message;
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child ended otherwise: " << status;
}

// Settings the library reads once per process (COLL_TRANSPORTS, say) need a process that has not
// read them yet. Returns true in such a process, with `environment` set: this test's body runs
// there. Otherwise runs this test alone in a fresh copy of this binary, expects it to pass, and
// returns false.
bool inFreshProcess(const std::vector<std::pair<std::string, std::string>>& environment) {
  if (getenv("COLLTEST_FRESH_PROCESS") != nullptr) return true;
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string filter = std::string("--gtest_filter=") + test->test_suite_name() + "." + test->name();
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("COLLTEST_FRESH_PROCESS", "1", 1);
    for (const auto& [name, value] : environment) setenv(name.c_str(), value.c_str(), 1);
    execl("/proc/self/exe", "/proc/self/exe", filter.c_str(), "--gtest_brief=1", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the fresh process failed (its output is above)";
  return false;
}

// A rank that dies while the socket transport connects: its card is in the store, and a survivor
// then dials its closed listener (and may wait to accept it). Before the setup watch, the dialler
// retried the refused connection until the 60 s init deadline; now every survivor gets
// collRemoteError naming the dead rank within seconds.
//
// Made deterministic with the store: rank 2 starts first and is stopped (SIGSTOP) inside the
// first all-gather, so ranks 0 and 1 publish their socket cards and wait for rank 2's; rank 1 is
// killed there, and only then does rank 2 go on, into a connect phase with a dead peer.
TEST(Faults, RankThatDiesWhileTransportsConnectGivesItsPeersAnErrorWithinSeconds) {
  // Sockets between every pair; the library reads COLL_TRANSPORTS once per process, and an
  // earlier test of this binary may have made it read the default already. The store's
  // all-gather, so this test can see from the store when each rank's card is out (a death during
  // the exchange between the ranks: tests/bootstrap/test_rank_exchange.cc).
  if (!inFreshProcess({{"COLL_TRANSPORTS", "net"}, {"COLL_BOOTSTRAP_EXCHANGE", "store"}})) return;
  struct Child {
    pid_t pid = -1;
    int idPipe[2] = {-1, -1};
    int resultPipe[2] = {-1, -1};
  };
  Child children[2];  // ranks 1 (the victim) and 2
  for (auto& child : children) {
    ASSERT_EQ(pipe(child.idPipe), 0);
    ASSERT_EQ(pipe(child.resultPipe), 0);
  }
  // Both children are forked before this process starts the id's server thread (fork safety).
  for (int c = 0; c < 2; ++c) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      collUniqueId id;
      if (read(children[c].idPipe[0], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) _exit(3);
      collConfig_t config = COLL_CONFIG_INITIALIZER;
      config.timeoutMs = 60000;
      collComm_t comm = nullptr;
      const auto start = Clock::now();
      const collResult_t rc = collCommInitRankConfig(&comm, 3, id, c + 1, &config);
      const std::string report = std::to_string(static_cast<int>(rc)) + " " + std::to_string(secondsSince(start)) +
                                 " " + collGetLastError(nullptr);
      if (write(children[c].resultPipe[1], report.data(), report.size()) < 0) _exit(5);
      _exit(0);
    }
    children[c].pid = pid;
  }
  Child& victim = children[0];
  Child& rank2 = children[1];
  collUniqueId id;
  ASSERT_EQ(collGetUniqueId(&id), collSuccess);
  for (auto& child : children) {
    close(child.idPipe[0]);
    close(child.resultPipe[1]);
  }
  const coll::bootstrap::UniqueIdInfo info = coll::bootstrap::decodeUniqueId(id);
  coll::bootstrap::TcpStoreClient watcher(info.host, info.port, info.secret,
                                          coll::deadlineAfter(std::chrono::seconds(10)));
  ASSERT_EQ(write(rank2.idPipe[1], &id, sizeof(id)), static_cast<ssize_t>(sizeof(id)));
  // Rank 2 alone: once its peer information is in, it waits for the others' (which cannot come).
  watcher.get("comm1/peers/ag/2", coll::deadlineAfter(std::chrono::seconds(30)));
  kill(rank2.pid, SIGSTOP);
  int status = 0;
  ASSERT_EQ(waitpid(rank2.pid, &status, WUNTRACED), rank2.pid);
  ASSERT_TRUE(WIFSTOPPED(status));
  ASSERT_EQ(write(victim.idPipe[1], &id, sizeof(id)), static_cast<ssize_t>(sizeof(id)));
  std::thread killer([&] {
    try {
      // The victim's card is out; it now waits for rank 2's, which is stopped.
      watcher.get("comm1/setup/net/0/ag/1", coll::deadlineAfter(std::chrono::seconds(30)));
    } catch (const std::exception&) {
    }
    kill(victim.pid, SIGKILL);
    int victimStatus = 0;
    waitpid(victim.pid, &victimStatus, 0);
    kill(rank2.pid, SIGCONT);
  });
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = 60000;
  collComm_t comm = nullptr;
  const auto start = Clock::now();
  const collResult_t rc = collCommInitRankConfig(&comm, 3, id, 0, &config);
  const double elapsed = secondsSince(start);
  const std::string message = collGetLastError(nullptr);
  killer.join();
  char report[2048] = {};
  const ssize_t got = read(rank2.resultPipe[0], report, sizeof(report) - 1);
  waitpid(rank2.pid, &status, 0);
  for (auto& child : children) {
    close(child.idPipe[1]);
    close(child.resultPipe[0]);
  }
  const std::string victimName = "rank 1 (pid " + std::to_string(victim.pid);
  EXPECT_EQ(rc, collRemoteError) << message;
  EXPECT_LT(elapsed, 10.0) << message;
  EXPECT_NE(message.find(victimName), std::string::npos) << message;
  ASSERT_GT(got, 0) << "rank 2 reported nothing";
  int rank2Code = -1;
  double rank2Seconds = -1;
  ASSERT_EQ(sscanf(report, "%d %lf", &rank2Code, &rank2Seconds), 2) << report;
  EXPECT_EQ(rank2Code, static_cast<int>(collRemoteError)) << report;
  EXPECT_LT(rank2Seconds, 10.0) << report;
  // Sockets open at first use (transport/domain.h), so setup dials no one: rank 2 learns of the
  // dead rank 1 from the departure notice at setup's closing barrier (or, with an older setup
  // that connected, from the setup watch); when rank 0 failed first, it may name rank 0 instead.
  const std::string rank2Message = report;
  EXPECT_TRUE(rank2Message.find("connecting the transports: " + victimName) != std::string::npos ||
              rank2Message.find("barrier('setup/connected'): " + victimName) != std::string::npos ||
              rank2Message.find("rank 0 (") != std::string::npos)
      << report;
}

TEST(Faults, AbsentRendezvousStoreTimesOut) {
  collUniqueId id;
  ASSERT_EQ(collGetUniqueId(&id), collSuccess);
  coll::bootstrap::UniqueIdInfo info = coll::bootstrap::decodeUniqueId(id);
  info.port = 1;  // nothing listens there
  collUniqueId nowhere = coll::bootstrap::encodeUniqueId(info);
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = 1000;
  collComm_t comm = nullptr;
  auto start = Clock::now();
  EXPECT_EQ(collCommInitRankConfig(&comm, 2, nowhere, 1, &config), collTimeout) << collGetLastError(nullptr);
  EXPECT_LT(secondsSince(start), 5.0);
}

// Two ranks as threads of this process. Rank 0 makes `pendingCall` in a thread of its own, which
// rank 1 never joins; 200 ms later this thread aborts rank 0's communicator, and the pending call
// must return an error within 2 s of it. Rank 1 then learns of the abort too: its first call may
// still complete (rank 0 may have published its part before the abort), the one after needs rank
// 0 again and must fail, not hang.
void expectAbortEndsAPendingCall(const std::function<collResult_t(collComm_t)>& pendingCall) {
  collUniqueId id;
  ASSERT_EQ(collGetUniqueId(&id), collSuccess);
  collComm_t comms[2] = {nullptr, nullptr};
  std::thread other([&] { EXPECT_EQ(collCommInitRank(&comms[1], 2, id, 1), collSuccess); });
  ASSERT_EQ(collCommInitRank(&comms[0], 2, id, 0), collSuccess);
  other.join();
  std::atomic<collResult_t> result{collSuccess};
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    result = pendingCall(comms[0]);
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(returned.load());
  auto start = Clock::now();
  EXPECT_EQ(collCommAbort(comms[0]), collSuccess);
  waiter.join();
  EXPECT_LT(secondsSince(start), 2.0);
  EXPECT_TRUE(result == collRemoteError || result == collInvalidUsage) << result;
  float x = 1, y = 0;
  start = Clock::now();
  collResult_t rc = collSuccess;
  for (int i = 0; i < 2 && rc == collSuccess; ++i) rc = collAllReduce(&x, &y, 1, collFloat, collSum, comms[1], nullptr);
  EXPECT_EQ(rc, collRemoteError);
  EXPECT_NE(std::string(collGetLastError(comms[1])).find("collCommAbort"), std::string::npos)
      << collGetLastError(comms[1]);
  EXPECT_LT(secondsSince(start), 2.0);
  EXPECT_EQ(collCommDestroy(comms[1]), collSuccess);
}

TEST(Faults, AbortFromAnotherThreadUnblocksAPendingCollective) {
  expectAbortEndsAPendingCall([](collComm_t comm) {
    float x = 1, y = 0;
    return collAllReduce(&x, &y, 1, collFloat, collSum, comm, nullptr);
  });
}

// The same for a group: its sends and receives are only queued by collSend and collRecv, and run
// in collGroupEnd, which collCommAbort must wait for before it frees the communicator (under
// AddressSanitizer, freeing it under the running group is a use after free).
TEST(Faults, AbortFromAnotherThreadUnblocksAPendingGroup) {
  // Rank 0 sends to rank 1 and waits to receive from it, in one group.
  expectAbortEndsAPendingCall([](collComm_t comm) {
    float x = 1, y = 0;
    collResult_t rc = collGroupStart();
    if (rc == collSuccess) rc = collSend(&x, 1, collFloat, 1, comm, nullptr);
    if (rc == collSuccess) rc = collRecv(&y, 1, collFloat, 1, comm, nullptr);
    const collResult_t end = collGroupEnd();
    return rc != collSuccess ? collInternalError : end;  // queuing alone must succeed
  });
}

TEST(Faults, SecondJobWithAnotherSecretCannotJoin) {
  collUniqueId id;
  ASSERT_EQ(collGetUniqueId(&id), collSuccess);
  coll::bootstrap::UniqueIdInfo info = coll::bootstrap::decodeUniqueId(id);
  info.secret[0] ^= 0xff;  // same address, another job's secret
  collUniqueId intruder = coll::bootstrap::encodeUniqueId(info);
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = 3000;
  collComm_t comm = nullptr;
  auto start = Clock::now();
  EXPECT_EQ(collCommInitRankConfig(&comm, 2, intruder, 1, &config), collInvalidUsage);
  EXPECT_LT(secondsSince(start), 2.0);
  EXPECT_NE(std::string(collGetLastError(nullptr)).find("secret"), std::string::npos) << collGetLastError(nullptr);
  // The real job still forms.
  auto failures = runAsThreads(1, [](collComm_t, int, int) { return std::vector<std::string>{}; });
  EXPECT_TRUE(failures.empty());
}

}  // namespace
}  // namespace colltest
