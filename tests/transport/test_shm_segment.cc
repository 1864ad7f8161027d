// Shared-memory segments in both forms: what one mapping writes the other sees, names disappear
// once released, and locators from peers are parsed strictly.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "common/error.h"
#include "transport/shm/shm_segment.h"

namespace coll {
namespace transport {
namespace {

void expectShared(ShmSegment& a, ShmSegment& b) {
  memset(a.data(), 0x5c, a.size());
  EXPECT_EQ(static_cast<unsigned char*>(b.data())[a.size() - 1], 0x5c);
  static_cast<unsigned char*>(b.data())[7] = 0x11;
  EXPECT_EQ(static_cast<unsigned char*>(a.data())[7], 0x11);
}

TEST(ShmSegment, AnonymousSegmentIsSharedThroughItsLocator) {
  if (!ShmSegment::canTakePeerDescriptors())
    GTEST_SKIP() << "pidfd_getfd is refused here (kernel before 5.6, seccomp or valgrind): ranks use named segments, "
                    "which NamedSegmentIsUnlinkedOnRelease covers";
  ShmSegment mine = ShmSegment::create(1 << 16, 1 << 16, /*anonymous=*/true);
  EXPECT_EQ(mine.locator().rfind("memfd:" + std::to_string(getpid()) + ":", 0), 0u) << mine.locator();
  ShmSegment theirs = ShmSegment::open(mine.locator(), 1 << 16);
  expectShared(mine, theirs);
  mine.releaseLocator();  // the descriptor closes; both mappings stay
  expectShared(theirs, mine);
}

TEST(ShmSegment, NamedSegmentIsUnlinkedOnRelease) {
  ShmSegment mine = ShmSegment::create(8192, 8192, /*anonymous=*/false);
  std::string path = "/dev/shm" + mine.locator();
  EXPECT_EQ(access(path.c_str(), F_OK), 0);
  ShmSegment theirs = ShmSegment::open(mine.locator(), 8192);
  expectShared(mine, theirs);
  mine.releaseLocator();
  EXPECT_NE(access(path.c_str(), F_OK), 0);
  expectShared(theirs, mine);
}

// Blocks of shared memory behind a named segment's file (tmpfs counts what is allocated).
long long allocatedBytesOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return static_cast<long long>(st.st_blocks) * 512;
}

TEST(ShmSegment, OnlyTheUsedRangesGetMemory) {
  constexpr size_t kBytes = 1 << 20, kPrefix = 8192, kFifoAt = 512 << 10, kFifo = 64 << 10;
  ShmSegment mine = ShmSegment::create(kBytes, kPrefix, /*anonymous=*/false);
  std::string path = "/dev/shm" + mine.locator();
  EXPECT_EQ(allocatedBytesOf(path), static_cast<long long>(kPrefix));
  ShmSegment theirs = ShmSegment::open(mine.locator(), kBytes);
  // The peer's end allocates a range in this rank's segment: both see it, zero-filled.
  theirs.allocate(kFifoAt, kFifo, "a test FIFO");
  EXPECT_EQ(allocatedBytesOf(path), static_cast<long long>(kPrefix + kFifo));
  const unsigned char* range = static_cast<const unsigned char*>(mine.data()) + kFifoAt;
  for (size_t i = 0; i < kFifo; i += 4096) EXPECT_EQ(range[i], 0) << i;
  static_cast<unsigned char*>(mine.data())[kFifoAt + 100] = 7;
  // Again, from the other end, after a write: nothing changes (both ends may come first).
  mine.allocate(kFifoAt, kFifo, "a test FIFO");
  EXPECT_EQ(static_cast<unsigned char*>(theirs.data())[kFifoAt + 100], 7);
  EXPECT_EQ(allocatedBytesOf(path), static_cast<long long>(kPrefix + kFifo));
  try {
    mine.allocate(kBytes - 4096, 8192, "a range past the end");
    FAIL() << "a range past the end was accepted";
  } catch (const CollError& e) {
    EXPECT_EQ(e.code(), collInternalError);
  }
}

// The probe answers what the calls do: where it says yes, a descriptor of this very process
// can be taken through its pidfd (the same calls a peer makes on an anonymous segment).
TEST(ShmSegment, DescriptorProbeMatchesTheCalls) {
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(getpid()), 0));
  int taken = pidfd < 0 ? -1 : static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, STDERR_FILENO, 0));
  EXPECT_EQ(ShmSegment::canTakePeerDescriptors(), taken >= 0) << "pidfd " << pidfd << ", taken " << taken;
  if (taken >= 0) close(taken);
  if (pidfd >= 0) close(pidfd);
}

TEST(ShmSegment, WrongSizeIsRefused) {
  ShmSegment mine = ShmSegment::create(8192, 8192, /*anonymous=*/ShmSegment::canTakePeerDescriptors());
  try {
    ShmSegment::open(mine.locator(), 4096);
    FAIL() << "a size mismatch was accepted";
  } catch (const CollError& e) {
    EXPECT_EQ(e.code(), collRemoteError);
  }
}

TEST(ShmSegment, MalformedLocatorsAreRefused) {
  for (const char* bad : {"", "memfd:", "memfd:-1:3", "memfd:12", "memfd:12:x", "memfd:12:3x", "memfd:0:3",
                          "memfd:99999999999999999999:1", "relative-name", "/two/slashes", "/"}) {
    try {
      ShmSegment::open(bad, 4096);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const CollError& e) {
      EXPECT_EQ(e.code(), collRemoteError) << bad << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace transport
}  // namespace coll
