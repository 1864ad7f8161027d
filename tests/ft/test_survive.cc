// A job goes on after losing a rank: survivors of a SIGKILL (of any rank, the store's host
// included) or a SIGSTOP shrink and go on computing the right sums; a replacement rank grows the
// communicator back; and nothing of the old communicator stays behind. Ranks are processes
// launched as collrun does (rank_job.h).
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/unique_id.h"
#include "collective.h"
#include "rank_job.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

using Clock = std::chrono::steady_clock;

// Board slots (rank_job.h).
constexpr int kDoneBase = 8;      // kDoneBase + r: rank r finished its part
constexpr int kVictimDone = 30;   // the stopped rank's own shrink has returned
constexpr int kIdReady = 31;      // the grow id is in kIdSlots
constexpr int kIdSlots = 32;      // 16 slots: a collUniqueId

// ---- shrink ----------------------------------------------------------------------------------

// All-reduces until the victim is gone (it kills or stops itself 300 ms in), then shrinks and
// checks the new communicator: its size, the excluded rank, this rank's new number, and sums.
struct ShrinkCase {
  int victim;
  int signal;              // SIGKILL or SIGSTOP
  collResult_t expected;   // what the survivors' failing call returns
  bool continueVictim = true;  // SIGSTOP: continued once the survivors are done (else killed)
};

std::vector<std::string> checkShrunk(collComm_t shrunk, int rank, int nranks, int victim) {
  std::vector<std::string> failures;
  int size = 0, newRank = -1, excluded[4] = {-1, -1, -1, -1}, count = 0;
  collCommCount(shrunk, &size);
  collCommUserRank(shrunk, &newRank);
  collCommExcludedRanks(shrunk, excluded, 4, &count);
  if (size != nranks - 1) failures.push_back(failure(rank, "shrunk to " + std::to_string(size) + " ranks"));
  if (newRank != (rank < victim ? rank : rank - 1)) failures.push_back(failure(rank, "new rank " + std::to_string(newRank)));
  if (count != 1 || excluded[0] != victim) failures.push_back(failure(rank, "excluded ranks wrong"));
  // Sums of (old rank + 1) over the survivors, in every size class of the data path.
  float expected = 0;
  for (int r = 0; r < nranks; ++r) expected += r == victim ? 0.0f : static_cast<float>(r + 1);
  for (size_t count : {size_t(1), size_t(1000), size_t(300007)}) {
    std::vector<float> data(count, static_cast<float>(rank + 1));
    if (collAllReduce(data.data(), data.data(), count, collFloat, collSum, shrunk, nullptr) != collSuccess) {
      failures.push_back(failure(rank, std::string("all-reduce on the shrunk communicator: ") + collGetLastError(shrunk)));
      break;
    }
    if (data[0] != expected || data[count - 1] != expected)
      failures.push_back(failure(rank, "sum " + std::to_string(data[0]) + ", expected " + std::to_string(expected)));
  }
  return failures;
}

// This process gets `signal` 300 ms from now, whatever it is doing then.
void signalSelfSoon(int signal) {
  std::thread([signal] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(getpid(), signal);
  }).detach();
}

std::vector<std::string> loseARankAndShrink(collComm_t comm, int rank, int nranks, SharedBoard& board,
                                            const ShrinkCase& c) {
  if (rank == c.victim) signalSelfSoon(c.signal);
  std::vector<float> data(1 << 16, 1.0f);
  collResult_t rc = collSuccess;
  for (int i = 0; i < 1000000 && rc == collSuccess; ++i)
    rc = collAllReduce(data.data(), data.data(), data.size(), collFloat, collMax, comm, nullptr);
  std::vector<std::string> failures;
  if (rank == c.victim) {
    // Stopped, then continued once the others are done: it was excluded, and must hear so.
    collComm_t shrunk = nullptr;
    const collResult_t own = collCommShrink(comm, nullptr, 0, &shrunk, nullptr, COLL_SHRINK_DEFAULT);
    if (own != collRemoteError)
      failures.push_back(failure(rank, std::string("the excluded rank's own shrink gave ") + collGetErrorString(own) +
                                           ": " + collGetLastError(comm)));
    else if (!lastErrorMentions(comm, "excluded this rank") && !lastErrorMentions(comm, "without this rank"))
      failures.push_back(failure(rank, std::string("the excluded rank's error: ") + collGetLastError(comm)));
    board.slot[kVictimDone].store(1);
    collCommDestroy(comm);
    return failures;
  }
  if (rc != c.expected && rc != collRemoteError)
    failures.push_back(failure(rank, std::string("the victim's loss gave ") + collGetErrorString(rc)));
  collComm_t shrunk = nullptr;
  const int64_t start = nowNs();
  if (collCommShrink(comm, nullptr, 0, &shrunk, nullptr, COLL_SHRINK_DEFAULT) != collSuccess) {
    failures.push_back(failure(rank, std::string("collCommShrink: ") + collGetLastError(comm)));
  } else {
    fprintf(stderr, "rank %d: shrunk in %.3f s\n", rank, (nowNs() - start) / 1e9);
    auto checked = checkShrunk(shrunk, rank, nranks, c.victim);
    failures.insert(failures.end(), checked.begin(), checked.end());
    board.slot[kDoneBase + rank].store(1);
    // A stopped rank wakes up while the survivors go on: it meets them and hears it is out.
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (c.signal == SIGSTOP && c.continueVictim && board.slot[kVictimDone].load() == 0 && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    collCommDestroy(shrunk);
  }
  collCommDestroy(comm);
  return failures;
}

void runShrinkCase(const ShrinkCase& c, const std::vector<std::string>& env = {}) {
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = 4000;
  const int nranks = 4;
  RankJob job(
      nranks, [&](collComm_t comm, int rank, int n, SharedBoard& board) { return loseARankAndShrink(comm, rank, n, board, c); },
      env, &config);
  if (c.signal == SIGSTOP) {
    // Once the survivors are done, the stopped rank goes on and must learn it was left out.
    const auto deadline = Clock::now() + std::chrono::seconds(90);
    auto survivorsDone = [&] {
      for (int r = 0; r < nranks; ++r)
        if (r != c.victim && job.board().slot[kDoneBase + r].load() == 0) return false;
      return true;
    };
    while (!survivorsDone() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    kill(job.pid(c.victim), c.continueVictim ? SIGCONT : SIGKILL);
  }
  const bool victimKilled = c.signal == SIGKILL || !c.continueVictim;
  auto failures = job.wait(120, victimKilled ? std::set<int>{c.victim} : std::set<int>{});
  std::string outputs;
  for (int r = 0; r < nranks && !failures.empty(); ++r) outputs += "---- rank " + std::to_string(r) + "\n" + job.output(r);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures) << outputs;
}

TEST(Shrink, SurvivorsOfAKilledRankBuildAWorkingCommunicator) { runShrinkCase({2, SIGKILL, collRemoteError}); }

// Rank 0's process hosted the rendezvous store: the survivors meet at rank 1's meeting point.
TEST(Shrink, SurvivorsOfTheStoresHostGoOn) { runShrinkCase({0, SIGKILL, collRemoteError}); }

// A stopped rank is not dead: the survivors time out, shrink without it once it stayed silent
// past COLL_AGREE_TIMEOUT_MS, and when it is continued its own shrink fails saying so.
TEST(Shrink, SurvivorsOfAStoppedRankGoOnAndTheStoppedRankLearnsItIsOut) {
  runShrinkCase({2, SIGSTOP, collTimeout}, {"COLL_AGREE_TIMEOUT_MS=3000"});
}

// The store's host stopped, not dead: every store request that would wait on it is bounded (the
// hang report, the notices, destroying the old communicator), the survivors meet at rank 1's
// meeting point once rank 0's accepts without answering for COLL_AGREE_TIMEOUT_MS, and go on. A
// stopped store host that is continued later may not hear it was left out (docs/errors.md): it is
// killed here.
TEST(Shrink, SurvivorsOfAStoppedStoreHostGoOn) {
  runShrinkCase({0, SIGSTOP, collTimeout, false}, {"COLL_AGREE_TIMEOUT_MS=3000"});
}

// ---- nothing leaks ---------------------------------------------------------------------------

int entriesIn(const char* path) {
  int count = 0;
  if (DIR* dir = opendir(path)) {
    while (dirent* e = readdir(dir)) count += e->d_name[0] == '.' ? 0 : 1;
    closedir(dir);
  }
  return count;
}

// Descriptors and threads go back to what the process had before init, once the old and the
// shrunk communicators are destroyed (servers that ended when idle are reaped).
std::vector<std::string> shrinkAndCountWhatIsLeft(collComm_t, int rank, int nranks, SharedBoard& board) {
  const int fdsBefore = entriesIn("/proc/self/fd"), threadsBefore = entriesIn("/proc/self/task");
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = 4000;
  collComm_t comm = nullptr;
  if (collCommInitFromEnv(&comm, &config) != collSuccess) return {failure(rank, collGetLastError(nullptr))};
  auto failures = loseARankAndShrink(comm, rank, nranks, board, {1, SIGKILL, collRemoteError});
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  int fds = 0, threads = 0;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    coll::bootstrap::reapEndedUniqueIdServers();
    fds = entriesIn("/proc/self/fd");
    threads = entriesIn("/proc/self/task");
  } while ((fds != fdsBefore || threads != threadsBefore) && Clock::now() < deadline);
  if (fds != fdsBefore)
    failures.push_back(failure(rank, std::to_string(fds - fdsBefore) + " descriptors more than before init"));
  if (threads != threadsBefore)
    failures.push_back(failure(rank, std::to_string(threads - threadsBefore) + " threads more than before init"));
  return failures;
}

TEST(Shrink, NothingOfTheOldCommunicatorStaysBehind) {
  RankJob job(4, shrinkAndCountWhatIsLeft, {}, nullptr, /*bodyInits=*/true);
  auto failures = job.wait(120, {1});
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// ---- grow ------------------------------------------------------------------------------------

// Rank 2 dies; the survivors shrink to 3, then a replacement process joins them as rank 3 of a
// grown communicator of 4, and all four sum correctly.
std::vector<std::string> growBack(collComm_t comm, int rank, int nranks, SharedBoard& board) {
  std::vector<std::string> failures;
  if (rank == 2) signalSelfSoon(SIGKILL);
  std::vector<float> data(4096, 1.0f);
  while (collAllReduce(data.data(), data.data(), data.size(), collFloat, collMax, comm, nullptr) == collSuccess) {
  }
  collComm_t shrunk = nullptr, grown = nullptr;
  if (collCommShrink(comm, nullptr, 0, &shrunk, nullptr, COLL_SHRINK_DEFAULT) != collSuccess)
    return {failure(rank, std::string("shrink: ") + collGetLastError(comm))};
  int newRank = -1;
  collCommUserRank(shrunk, &newRank);
  collUniqueId id;
  if (newRank == 0) {
    if (collGetUniqueId(&id) != collSuccess) return {failure(rank, "collGetUniqueId failed")};
    int64_t words[16];
    memcpy(words, &id, sizeof(id));
    for (int i = 0; i < 16; ++i) board.slot[kIdSlots + i].store(words[i]);
    board.slot[kIdReady].store(1);
  }
  if (collCommGrow(shrunk, nranks, newRank == 0 ? &id : nullptr, -1, &grown, nullptr) != collSuccess) {
    failures.push_back(failure(rank, std::string("grow: ") + collGetLastError(shrunk)));
  } else {
    int grownRank = -1;
    collCommUserRank(grown, &grownRank);
    if (grownRank != newRank) failures.push_back(failure(rank, "an existing rank changed rank in the grown communicator"));
    float value = static_cast<float>(grownRank + 1);
    if (collAllReduce(&value, &value, 1, collFloat, collSum, grown, nullptr) != collSuccess || value != 10.0f)
      failures.push_back(failure(rank, "grown sum " + std::to_string(value) + ": " + collGetLastError(grown)));
    collCommDestroy(grown);
  }
  collCommDestroy(shrunk);
  collCommDestroy(comm);
  return failures;
}

std::vector<std::string> replacement(SharedBoard& board) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (board.slot[kIdReady].load() == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (board.slot[kIdReady].load() == 0) return {"replacement: no grow id within 60 s"};
  int64_t words[16];
  for (int i = 0; i < 16; ++i) words[i] = board.slot[kIdSlots + i].load();
  collUniqueId id;
  memcpy(&id, words, sizeof(id));
  collComm_t grown = nullptr;
  if (collCommGrow(nullptr, 4, &id, 3, &grown, nullptr) != collSuccess)
    return {std::string("replacement: grow: ") + collGetLastError(nullptr)};
  float value = 4.0f;
  std::vector<std::string> failures;
  if (collAllReduce(&value, &value, 1, collFloat, collSum, grown, nullptr) != collSuccess || value != 10.0f)
    failures.push_back("replacement: grown sum " + std::to_string(value));
  collCommDestroy(grown);
  return failures;
}

TEST(Grow, AReplacementRankJoinsTheSurvivors) {
  auto failures = runJob(4, growBack, 20000, {2}, replacement);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace colltest
