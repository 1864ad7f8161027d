// Faults on the staging path end in errors on every rank within the timeout, never in a hang: a
// rank killed mid-call (processes), an abort while a call waits, a peer that stops taking frames
// (the sender's timeout), and peers that planned different calls (a frame of the wrong size).
// The stand-in kernels must stop too, as the real ones do when the proxy asks them to.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/tcp_store.h"
#include "common/random.h"
#include "tests/staged/staged_ranks.h"

namespace coll {
namespace staging_test {
namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Polls the rank's domain until it reports an error or `seconds` pass; the seconds it took, or -1.
double secondsUntilError(StagedRank& rank, double seconds, collResult_t* code, std::string* message) {
  const auto start = Clock::now();
  while (secondsSince(start) < seconds) {
    *message = rank.error(code);
    if (*code != collSuccess) return secondsSince(start);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

StagedCase largeAllReduce(int n) {
  StagedCase c;
  c.nranks = n;
  c.count = 200000;
  return c;
}

// What a rank's domain reported within `seconds` ("" and collSuccess when nothing).
std::string errorWithin(StagedRank& me, double seconds, collResult_t* code) {
  std::string message;
  if (secondsUntilError(me, seconds, code, &message) < 0) *code = collSuccess;
  return message;
}

std::string rankName(int r) { return "rank " + std::to_string(r); }

// Rank 0 waits in a call rank 1 never runs a kernel for; another thread aborts rank 0 after
// 300 ms. Rank 0's kernel must stop (aborted), and rank 1, whose proxy still expects the call,
// must learn of it through the carrier.
TEST(StagedFaults, AbortEndsAWaitingCallOnEveryRank) {
  const auto failures = runStagedThreads(2, StagedRankOptions{}, [](StagedRank& me, int r) -> std::string {
    me.enqueue(largeAllReduce(2));
    const auto start = Clock::now();
    if (r == 0) {
      std::thread aborter([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        me.domain().requestAbort();
      });
      const bool ran = me.runKernel(0, 1);
      aborter.join();
      if (ran) return "rank 0's kernel finished a call rank 1 never ran";
      if (secondsSince(start) > 10) return "rank 0's kernel took " + std::to_string(secondsSince(start)) + " s";
    }
    collResult_t code;
    const std::string message = errorWithin(me, 15, &code);
    if (code == collSuccess) return rankName(r) + " saw no error within 15 s";
    if (r == 0 && message.find("aborted") == std::string::npos) return "rank 0's error: " + message;
    return "";
  });
  ASSERT_TRUE(failures.empty()) << failures.front();
}

// Rank 1's kernel starts the broadcast 2 s late (its stream was stuck behind other work): its
// proxy lands slices until the slots are full, then takes no more frames, and the root's proxy can
// post no more. With a 1 s timeout the root fails with collTimeout naming the wait and its kernel
// stops; rank 1's kernel, when it comes, takes what landed and then stops with an error as the
// carrier reports the root's failure.
TEST(StagedFaults, APeerThatTakesNoFramesTimesTheSenderOut) {
  StagedRankOptions options;
  options.timeoutMs = 1000;
  options.socketBufferBytes = 8192;  // else the sockets would hold the whole broadcast
  const auto failures = runStagedThreads(2, options, [](StagedRank& me, int r) -> std::string {
    StagedCase c = largeAllReduce(2);
    c.type = CollType::kBroadcast;
    c.root = 0;
    const auto start = Clock::now();
    me.enqueue(c);
    if (r == 1) std::this_thread::sleep_for(std::chrono::seconds(2));
    if (me.runKernel(0, 1)) return rankName(r) + "'s kernel finished the stalled call";
    collResult_t code;
    const std::string message = errorWithin(me, 15, &code);
    if (code == collSuccess) return rankName(r) + " saw no error within 15 s";
    if (r == 0 && (code != collTimeout || message.find("for rank 1 waited 1000 ms") == std::string::npos))
      return "the root's error: " + std::string(collGetErrorString(code)) + ": " + message;
    if (secondsSince(start) > 15) return rankName(r) + " took " + std::to_string(secondsSince(start)) + " s";
    return "";
  });
  ASSERT_TRUE(failures.empty()) << failures.front();
}

// Rank 1 plans a hundred times the count rank 0 does: the first frame, of another call's tag
// (src/call_tag.h), fails the receiver naming its peer, before a byte of it lands, and both ranks'
// kernels stop with errors.
TEST(StagedFaults, PeersThatPlannedDifferentCallsFailNamingThePeer) {
  const auto failures = runStagedThreads(2, StagedRankOptions{}, [](StagedRank& me, int r) -> std::string {
    StagedCase c = largeAllReduce(2);
    c.count = r == 0 ? 10 : 1000;
    me.enqueue(c);
    if (me.runKernel(0, 1)) return rankName(r) + "'s kernel finished a mismatched call";
    collResult_t code;
    const std::string message = errorWithin(me, 15, &code);
    if (code != collRemoteError) return rankName(r) + ": " + collGetErrorString(code) + ": " + message;
    if (message.find("staging from rank") == std::string::npos && message.find(rankName(1 - r)) == std::string::npos)
      return rankName(r) + "'s error names neither the frame nor the peer: " + message;
    return "";
  });
  ASSERT_TRUE(failures.empty()) << failures.front();
}

// Ranks as processes over a TCP store: the last one SIGKILLs itself while every rank loops over
// large all-reduces. Each survivor must see collRemoteError within 10 s, and its kernel must stop.
// A child reports through its exit status: 0 passed, 1 failed (what failed goes to stderr).
int survivorBody(const std::string& host, uint16_t port, const bootstrap::Secret& secret, int rank, int n) {
  bootstrap::TcpStoreClient store(host, port, secret, deadlineAfter(std::chrono::seconds(30)));
  StagedRankOptions options;
  StagedRank me(store, rank, n, options);
  if (rank == n - 1)
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      kill(getpid(), SIGKILL);
    }).detach();
  const auto start = Clock::now();
  for (size_t call = 0; secondsSince(start) < 60; ++call) {
    me.enqueue(largeAllReduce(n));
    if (!me.runKernel(call, static_cast<unsigned>(call + 1))) break;
  }
  collResult_t code;
  std::string message;
  const double took = secondsUntilError(me, 10, &code, &message);
  if (took < 0 || code != collRemoteError || secondsSince(start) > 15) {
    fprintf(stderr, "rank %d: code %d after %.1f s: %s\n", rank, static_cast<int>(code), secondsSince(start),
            message.c_str());
    return 1;
  }
  return 0;
}

TEST(StagedFaults, RankKilledMidCallGivesEverySurvivorAnError) {
  constexpr int kRanks = 3;
  bootstrap::Secret secret{};
  fillRandom(secret.data(), secret.size(), "the test's store secret");
  bootstrap::TcpStoreServer server("127.0.0.1", 0, secret);
  std::vector<pid_t> children;
  for (int r = 0; r < kRanks; ++r) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 1;
      try {
        status = survivorBody("127.0.0.1", server.port(), secret, r, kRanks);
      } catch (const std::exception& e) {
        fprintf(stderr, "rank %d: %s\n", r, e.what());
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  const auto start = Clock::now();
  for (int r = 0; r < kRanks; ++r) {
    int status = 0;
    while (waitpid(children[r], &status, WNOHANG) == 0) {
      if (secondsSince(start) > 90) {
        kill(children[r], SIGKILL);
        waitpid(children[r], &status, 0);
        ADD_FAILURE() << "rank " << r << " hung";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (r == kRanks - 1) {
      EXPECT_TRUE(WIFSIGNALED(status)) << "the victim was not killed";
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "survivor " << r << " failed (its stderr says why)";
    }
  }
}

}  // namespace
}  // namespace staging_test
}  // namespace coll
