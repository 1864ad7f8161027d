// Cross-memory attach between real processes (transport/shm/cross_memory.h): the probe that
// decides whether direct reads may be planned must fail where a write would (a read-only word),
// and reads and writes must move exactly the bytes asked, both ways.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/error.h"
#include "transport/shm/cross_memory.h"

namespace coll {
namespace transport {
namespace {

// A child process that holds a writable and a read-only page, reports their addresses through a
// pipe, and stays until the parent writes a byte back.
class PeerProcess {
 public:
  PeerProcess() {
    int toParent[2], toChild[2];
    if (pipe(toParent) != 0 || pipe(toChild) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      close(toParent[0]);
      close(toChild[1]);
      const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      auto* writable =
          static_cast<uint8_t*>(mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      auto* readOnly =
          static_cast<uint8_t*>(mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      for (size_t i = 0; i < page; ++i) writable[i] = readOnly[i] = static_cast<uint8_t>(i * 7 + 1);
      mprotect(readOnly, page, PROT_READ);
      uint64_t addresses[2] = {reinterpret_cast<uint64_t>(writable), reinterpret_cast<uint64_t>(readOnly)};
      if (write(toParent[1], addresses, sizeof(addresses)) != sizeof(addresses)) _exit(1);
      char done;
      _exit(read(toChild[0], &done, 1) == 1 ? 0 : 1);
    }
    close(toParent[1]);
    close(toChild[0]);
    release_ = toChild[1];
    uint64_t addresses[2];
    if (read(toParent[0], addresses, sizeof(addresses)) != sizeof(addresses)) throw std::runtime_error("no addresses");
    close(toParent[0]);
    writable_ = addresses[0];
    readOnly_ = addresses[1];
  }
  ~PeerProcess() {
    char done = 1;
    if (write(release_, &done, 1) != 1) kill(pid_, SIGKILL);
    close(release_);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  pid_t pid() const { return pid_; }
  uint64_t writable() const { return writable_; }
  uint64_t readOnly() const { return readOnly_; }

 private:
  pid_t pid_ = -1;
  int release_ = -1;
  uint64_t writable_ = 0, readOnly_ = 0;
};

uint8_t patternAt(size_t i) { return static_cast<uint8_t>(i * 7 + 1); }

TEST(CrossMemory, ProbeNeedsAWritableWord) {
  PeerProcess peer;
  uint64_t expected;
  for (size_t i = 0; i < sizeof(expected); ++i) reinterpret_cast<uint8_t*>(&expected)[i] = patternAt(i);
  EXPECT_TRUE(probeCrossMemory(peer.pid(), peer.writable(), &expected, sizeof(expected)));
  // Readable with the right value, but a write there fails: no direct reads then.
  EXPECT_FALSE(probeCrossMemory(peer.pid(), peer.readOnly(), &expected, sizeof(expected)));
  uint64_t wrong = expected ^ 1;
  EXPECT_FALSE(probeCrossMemory(peer.pid(), peer.writable(), &wrong, sizeof(wrong)));
}

TEST(CrossMemory, ReadsAndWritesMoveExactlyTheBytesAsked) {
  PeerProcess peer;
  // Odd offsets and lengths: 1,000 bytes from offset 13 written, then the page read back whole.
  std::vector<uint8_t> mine(1000);
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<uint8_t>(255 - i % 251);
  writePeerMemory(peer.pid(), peer.writable() + 13, mine.data(), mine.size());
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<uint8_t> back(page, 0);
  readPeerMemory(peer.pid(), peer.writable(), back.data(), page);
  for (size_t i = 0; i < page; ++i) {
    const bool written = i >= 13 && i < 13 + mine.size();
    ASSERT_EQ(back[i], written ? mine[i - 13] : patternAt(i)) << "byte " << i;
  }
  // A write to a read-only page fails with the library's error, not a crash or a partial success.
  EXPECT_THROW(writePeerMemory(peer.pid(), peer.readOnly(), mine.data(), mine.size()), CollError);
  std::vector<uint8_t> untouched(page, 0);
  readPeerMemory(peer.pid(), peer.readOnly(), untouched.data(), page);
  for (size_t i = 0; i < page; ++i) ASSERT_EQ(untouched[i], patternAt(i)) << "byte " << i;
}

}  // namespace
}  // namespace transport
}  // namespace coll
