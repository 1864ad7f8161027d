// A timeout names the rank that did not arrive (docs/errors.md, "Timeouts"): with one rank of a
// host stopped (SIGSTOP), between two collectives or inside one, every other rank's error names
// that rank and says its process is stopped, whichever rank happened to time out first (before:
// "rank 1 failed: ... timed out after 3000 ms waiting for peers", naming only the first to time
// out).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "collective.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

constexpr int kRanks = 4;
constexpr int kStopped = 2;
constexpr int kTimeoutMs = 3000;
constexpr int kCallsBeforeTheStop = 50;

// In memory every rank process shares (mapped before the fork).
struct Board {
  std::atomic<int> stoppedPid{0};
  std::atomic<int> survivorsDone{0};
};

enum class StopAt { kBetweenCalls, kInsideACall };

// The stopped rank stops itself; the others all-reduce until a call fails, and check its message.
// The last survivor to finish ends the stopped rank, so that the run need not wait for the
// launcher's own timeout.
std::vector<std::string> allReduceUntilATimeout(Board* board, StopAt stopAt, collComm_t comm, int rank) {
  const std::string me = "rank " + std::to_string(rank) + ": ";
  if (rank == kStopped) {
    board->stoppedPid.store(getpid());
    if (stopAt == StopAt::kInsideACall) {
      // A helper process, not a thread, stops the rank inside its call: ThreadSanitizer refuses
      // new threads in a child forked from a threaded process, which the rank is.
      const pid_t rankPid = getpid();
      if (fork() == 0) {
        usleep(300000);
        kill(rankPid, SIGSTOP);
        _exit(0);
      }
    }
  }
  std::vector<float> data(1 << 16, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  collResult_t rc = collSuccess;
  for (int call = 0; rc == collSuccess; ++call) {
    if (rank == kStopped && stopAt == StopAt::kBetweenCalls && call == kCallsBeforeTheStop) kill(getpid(), SIGSTOP);
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) return {me + "no call failed in 60 s"};
    std::fill(data.begin(), data.end(), 1.0f);
    rc = collAllReduce(data.data(), data.data(), data.size(), collFloat, collSum, comm, nullptr);
  }
  const std::string message = collGetLastError(comm);
  if (board->survivorsDone.fetch_add(1) + 1 == kRanks - 1) kill(board->stoppedPid.load(), SIGKILL);
  std::vector<std::string> failures;
  const std::string named =
      "rank " + std::to_string(kStopped) + " (pid " + std::to_string(board->stoppedPid.load()) + ")";
  if (message.find(named) == std::string::npos)
    failures.push_back(me + "the error does not name " + named + ": " + message);
  if (message.find("its process is stopped") == std::string::npos)
    failures.push_back(me + "the error does not say the process is stopped: " + message);
  if (stopAt == StopAt::kBetweenCalls && message.find("has not begun this collective") == std::string::npos)
    failures.push_back(me + "the error does not say it has not begun the call: " + message);
  return failures;
}

std::vector<std::string> runWithOneRankStopped(StopAt stopAt) {
  void* memory = mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return {"mmap failed"};
  Board* board = new (memory) Board();
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = kTimeoutMs;
  std::vector<std::string> failures = runAsProcessesWithSetup(
      kRanks, [](int) {},
      [&](collComm_t comm, int rank, int) { return allReduceUntilATimeout(board, stopAt, comm, rank); },
      initMustSucceed(), 90, &config);
  munmap(memory, sizeof(Board));
  // The stopped rank's own report is that it was killed.
  std::vector<std::string> survivors;
  for (const std::string& f : failures)
    if (f.rfind("rank " + std::to_string(kStopped) + " ", 0) != 0) survivors.push_back(f);
  return survivors;
}

TEST(StallBlame, ARankStoppedBetweenCollectivesIsNamedByEveryOtherRank) {
  const std::vector<std::string> failures = runWithOneRankStopped(StopAt::kBetweenCalls);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST(StallBlame, ARankStoppedInsideACollectiveIsNamedByEveryOtherRank) {
  const std::vector<std::string> failures = runWithOneRankStopped(StopAt::kInsideACall);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace colltest
