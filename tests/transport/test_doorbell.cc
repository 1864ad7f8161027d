// The doorbell's sleep protocol between two processes, as ranks use it: a ringer that publishes
// just as its peer goes to sleep must still wake it, whether the ringer fences or rings without a
// fence (membarrier on the sleeper's side, doorbell.h). A lost wake-up shows as a sleep that runs
// to its timeout although the data was published and nothing rang. (With the sleeper's
// fenceAgainstRingers left out, 2 to 11 of 20000 rounds lost their wake-up on a 2-core AMD EPYC.)
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <new>

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transport/doorbell.h"

namespace coll {
namespace transport {
namespace {

constexpr int64_t kSleepTimeoutNs = 200 * 1000 * 1000;
constexpr uint64_t kRounds = 20000;

// In memory both processes map, as a rank's doorbell in its shared-memory segment.
struct Race {
  Doorbell bell;
  alignas(64) std::atomic<uint64_t> published{0};  // the ringer's data: the round it belongs to
  alignas(64) std::atomic<uint64_t> round{0};      // the round the sleeper is about to sleep in
  alignas(64) std::atomic<int> ringerFenceFree{-1};
};

// The sleeper's side, as ProgressWaiter::idle and sleepUntilRung do it: snapshot, raise the flag,
// fence against ringers, re-check, sleep. Returns whether it slept out its timeout with the
// round's data published long before and no ring.
bool sleepLosesWakeUp(Race& race, uint64_t round) {
  const uint32_t snapshot = race.bell.seq.load(std::memory_order_seq_cst);
  race.bell.sleeping.store(1, std::memory_order_seq_cst);
  fenceAgainstRingers();
  bool lost = false;
  if (race.published.load(std::memory_order_acquire) < round) {
    const auto start = std::chrono::steady_clock::now();
    sleepOnDoorbell(&race.bell, snapshot, kSleepTimeoutNs);
    const auto slept = std::chrono::steady_clock::now() - start;
    lost = race.bell.seq.load(std::memory_order_seq_cst) == snapshot &&
           race.published.load(std::memory_order_acquire) >= round &&
           slept >= std::chrono::nanoseconds(kSleepTimeoutNs / 2);
  }
  race.bell.sleeping.store(0, std::memory_order_relaxed);
  return lost;
}

// A forked ringer (which first asks to ring without a fence, or not) publishes each round the
// moment this process starts to arm for it. Returns the lost wake-ups; *ringerFenceFree says how
// the ringer rang.
int lostWakeUps(bool ringerAsksFenceFree, bool* ringerFenceFree) {
  void* memory = mmap(nullptr, sizeof(Race), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(memory, MAP_FAILED);
  if (memory == MAP_FAILED) return -1;
  Race& race = *new (memory) Race;
  const pid_t child = fork();
  EXPECT_GE(child, 0);
  if (child == 0) {
    // Forked from a process that may have registered: rings with the fence until it asks.
    const bool inherited = ringsWithoutFence();
    const bool fenceFree = ringWithoutFenceIfPossible(ringerAsksFenceFree);
    race.ringerFenceFree.store(inherited ? 2 : (fenceFree ? 1 : 0));
    for (uint64_t r = 1; r <= kRounds; ++r) {
      while (race.round.load(std::memory_order_acquire) < r) cpuRelax();
      race.published.store(r, std::memory_order_release);
      ringDoorbell(&race.bell);
    }
    _exit(0);
  }
  int lost = 0;
  for (uint64_t r = 1; r <= kRounds; ++r) {
    race.round.store(r, std::memory_order_release);
    if (sleepLosesWakeUp(race, r)) ++lost;
    while (race.published.load(std::memory_order_acquire) < r) cpuRelax();
  }
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "ringer's status " << status;
  const int how = race.ringerFenceFree.load();
  EXPECT_NE(how, 2) << "the forked ringer kept its parent's fence-free ringing without a registration of its own";
  *ringerFenceFree = how == 1;
  munmap(memory, sizeof(Race));
  return lost;
}

TEST(Doorbell, RingsWithAFenceLoseNoWakeUp) {
  bool fenceFree = true;
  EXPECT_EQ(lostWakeUps(/*ringerAsksFenceFree=*/false, &fenceFree), 0);
  EXPECT_FALSE(fenceFree);
}

TEST(Doorbell, RingsWithoutAFenceLoseNoWakeUp) {
  // This process registers too, so that its fork below starts out registered in memory (the
  // child must not inherit fence-free ringing: the kernel does not carry the registration over).
  if (!ringWithoutFenceIfPossible(true))
    GTEST_SKIP() << "membarrier's global expedited command is not available here (kernel before 4.16, or refused "
                    "by a seccomp filter): rings keep their fence, which RingsWithAFenceLoseNoWakeUp covers";
  bool fenceFree = false;
  EXPECT_EQ(lostWakeUps(/*ringerAsksFenceFree=*/true, &fenceFree), 0);
  EXPECT_TRUE(fenceFree);
}

}  // namespace
}  // namespace transport
}  // namespace coll
