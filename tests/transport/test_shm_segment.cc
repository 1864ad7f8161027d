// Shared-memory segments in both forms: what one mapping writes the other sees, names disappear
// once released, and locators from peers are parsed strictly.
#include <gtest/gtest.h>
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
  ShmSegment mine = ShmSegment::create(1 << 16, /*anonymous=*/true);
  EXPECT_EQ(mine.locator().rfind("memfd:" + std::to_string(getpid()) + ":", 0), 0u) << mine.locator();
  ShmSegment theirs = ShmSegment::open(mine.locator(), 1 << 16);
  expectShared(mine, theirs);
  mine.releaseLocator();  // the descriptor closes; both mappings stay
  expectShared(theirs, mine);
}

TEST(ShmSegment, NamedSegmentIsUnlinkedOnRelease) {
  ShmSegment mine = ShmSegment::create(8192, /*anonymous=*/false);
  std::string path = "/dev/shm" + mine.locator();
  EXPECT_EQ(access(path.c_str(), F_OK), 0);
  ShmSegment theirs = ShmSegment::open(mine.locator(), 8192);
  expectShared(mine, theirs);
  mine.releaseLocator();
  EXPECT_NE(access(path.c_str(), F_OK), 0);
  expectShared(theirs, mine);
}

TEST(ShmSegment, WrongSizeIsRefused) {
  ShmSegment mine = ShmSegment::create(8192, true);
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
