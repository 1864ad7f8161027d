// A process that makes communicators again and again keeps its descriptors, threads and memory
// flat: each collGetUniqueId's rendezvous server ends with the communicators that used it, and an
// id that made none ends with collUniqueIdRelease. (Before, every id kept a thread and two
// descriptors for the life of the process: under `ulimit -n 1024` the 504th cycle failed, and
// ids never used could not be let go at all.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "collective.h"
#include "tests/common/process_usage.h"

namespace {

using colltest::openFds;
using colltest::residentKiB;
using colltest::threadCount;

// One rank: id, init, an all-reduce, destroy.
void cycle() {
  collUniqueId id;
  ASSERT_EQ(collGetUniqueId(&id), collSuccess);
  collComm_t comm = nullptr;
  ASSERT_EQ(collCommInitRank(&comm, 1, id, 0), collSuccess) << collGetLastError(nullptr);
  float value = 1.0f;
  ASSERT_EQ(collAllReduce(&value, &value, 1, collFloat32, collSum, comm, nullptr), collSuccess);
  ASSERT_EQ(collCommDestroy(comm), collSuccess);
}

// The server of the last id ends a moment after its last client leaves; the next id reaps it.
template <typename Measure>
size_t settled(Measure measure, size_t ceiling) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  size_t value = measure();
  while (value > ceiling && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    value = measure();
  }
  return value;
}

TEST(LifecycleLeaks, ThousandInitDestroyCyclesKeepFdsThreadsAndMemoryFlat) {
  constexpr int kWarmup = 20, kCycles = 1000;
  for (int i = 0; i < kWarmup; ++i) ASSERT_NO_FATAL_FAILURE(cycle());
  const size_t fds = openFds(), tasks = threadCount(), rss = residentKiB();
  for (int i = 0; i < kCycles; ++i) ASSERT_NO_FATAL_FAILURE(cycle()) << "cycle " << i;
  // One server may still be ending (it is reaped by the next id): allow its thread and sockets.
  const size_t fdsAfter = settled(openFds, fds + 3), tasksAfter = settled(threadCount, tasks + 1);
  const size_t rssAfter = residentKiB();
  printf("after %d more cycles: fds %zu -> %zu, threads %zu -> %zu, RSS %zu -> %zu KiB\n", kCycles, fds, fdsAfter,
         tasks, tasksAfter, rss, rssAfter);
  EXPECT_LE(fdsAfter, fds + 3) << "descriptors grow with communicators";
  EXPECT_LE(tasksAfter, tasks + 1) << "threads grow with communicators";
  // A leak of one server (a thread's stack alone is 8 MiB of address space, some of it resident)
  // or of one buffer per cycle would show; allocator noise is well under this.
  EXPECT_LE(rssAfter, rss + 16 * 1024) << "resident memory grows with communicators";
}

// Ids made and never used, each released: the servers end with the calls (before there was no way
// to release one: every id kept a thread and two descriptors for the life of the process).
TEST(LifecycleLeaks, UnusedIdsReleasedKeepFdsAndThreadsFlat) {
  constexpr int kIds = 300;
  const size_t fds = openFds(), tasks = threadCount();
  for (int i = 0; i < kIds; ++i) {
    collUniqueId id;
    ASSERT_EQ(collGetUniqueId(&id), collSuccess) << collGetLastError(nullptr);
    ASSERT_EQ(collUniqueIdRelease(&id), collSuccess) << collGetLastError(nullptr);
    ASSERT_EQ(collUniqueIdRelease(&id), collSuccess) << "a second release is a no-op";
  }
  const size_t fdsAfter = settled(openFds, fds + 1), tasksAfter = settled(threadCount, tasks);
  printf("after %d ids made and released: fds %zu -> %zu, threads %zu -> %zu\n", kIds, fds, fdsAfter, tasks,
         tasksAfter);
  EXPECT_LE(fdsAfter, fds + 1) << "descriptors grow with unused ids";
  EXPECT_LE(tasksAfter, tasks) << "threads grow with unused ids";
}

// A released id's server stays for the ranks already connected to it, and ends when they leave.
TEST(LifecycleLeaks, AReleasedIdServesTheCommunicatorsItMadeUntilTheyAreGone) {
  collUniqueId id;
  ASSERT_EQ(collGetUniqueId(&id), collSuccess);
  collComm_t comm = nullptr;
  ASSERT_EQ(collCommInitRank(&comm, 1, id, 0), collSuccess) << collGetLastError(nullptr);
  ASSERT_EQ(collUniqueIdRelease(&id), collSuccess);
  collComm_t child = nullptr;
  ASSERT_EQ(collCommSplit(comm, 0, 0, &child, nullptr), collSuccess) << collGetLastError(comm);
  float value = 1.0f;
  EXPECT_EQ(collAllReduce(&value, &value, 1, collFloat32, collSum, child, nullptr), collSuccess);
  EXPECT_EQ(collCommDestroy(child), collSuccess);
  EXPECT_EQ(collCommDestroy(comm), collSuccess);
}

TEST(LifecycleLeaks, ReleasingANullOrMalformedIdIsRefused) {
  EXPECT_EQ(collUniqueIdRelease(nullptr), collInvalidArgument);
  EXPECT_NE(std::string(collGetLastError(nullptr)).find("collUniqueIdRelease: uniqueId is NULL"), std::string::npos);
  collUniqueId garbage;
  memset(&garbage, 0x5a, sizeof(garbage));
  EXPECT_EQ(collUniqueIdRelease(&garbage), collInvalidArgument);
  EXPECT_NE(std::string(collGetLastError(nullptr)).find("not valid"), std::string::npos) << collGetLastError(nullptr);
}

}  // namespace
