#include "transport/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "common/error.h"
#include "common/random.h"

namespace coll {
namespace transport {
namespace {

constexpr char kMemfdPrefix[] = "memfd:";
#ifdef MADV_POPULATE_WRITE
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kMadvPopulateWrite = 23;  // the kernel's value, for older C libraries' headers
#endif

std::string randomSegmentName() {
  unsigned char random[12];
  fillRandom(random, sizeof(random), "a shared-memory name");
  static const char kHex[] = "0123456789abcdef";
  std::string name = "/coll-";
  for (unsigned char byte : random) {
    name += kHex[byte >> 4];
    name += kHex[byte & 15];
  }
  return name;
}

void* mapFd(int fd, size_t bytes, const std::string& what) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED)
    throwSystemError(formatString("mmap of shared memory %s (%zu bytes)", what.c_str(), bytes).c_str());
  return data;
}

// Sizes the new segment and allocates its first `allocated` bytes now (posix_fallocate), so that
// a full /dev/shm fails here with a clear error instead of a SIGBUS in the middle of a collective.
// The rest stays a hole until allocate() fills the ranges that are used.
void sizeSegment(int fd, size_t bytes, size_t allocated, const std::string& what) {
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0)
    throwSystemError(formatString("ftruncate of %s to %zu bytes", what.c_str(), bytes).c_str());
  int rc = posix_fallocate(fd, 0, static_cast<off_t>(std::min(bytes, allocated)));
  if (rc != 0) {
    errno = rc;
    throwSystemError(
        formatString("allocating %zu bytes of shared memory for %s (is /dev/shm full?)", allocated, what.c_str())
            .c_str());
  }
}

// "memfd:PID:FD" with both numbers in range, nothing else.
bool parseMemfdLocator(const std::string& locator, long* pid, long* fd) {
  const char* text = locator.c_str() + sizeof(kMemfdPrefix) - 1;
  char* end = nullptr;
  errno = 0;
  *pid = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != ':' || *pid <= 0 || *pid > (1L << 30)) return false;
  text = end + 1;
  *fd = strtol(text, &end, 10);
  return errno == 0 && end != text && *end == '\0' && *fd >= 0 && *fd < (1L << 24);
}

int takePeerDescriptor(long pid, long fd, const std::string& locator) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  if (pidfd < 0)
    throwSystemError(formatString("pidfd_open for shared memory %s (did the rank exit?)", locator.c_str()).c_str());
  int local = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, static_cast<int>(fd), 0));
  int saved = errno;
  close(pidfd);
  errno = saved;
  if (local < 0) throwSystemError(formatString("pidfd_getfd for shared memory %s", locator.c_str()).c_str());
  return local;
#else
  throwError(collSystemError, "shared memory %s: this system has no pidfd_getfd", locator.c_str());
#endif
}

}  // namespace

bool ShmSegment::canTakePeerDescriptors() {
  static const bool available = [] {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
    int pidfd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(getpid()), 0));
    if (pidfd < 0) return false;
    // Asked for no descriptor at all: EBADF where the call works, ENOSYS or EPERM where not.
    long rc = syscall(SYS_pidfd_getfd, pidfd, -1, 0);
    int error = errno;
    close(pidfd);
    return rc < 0 && error == EBADF;
#else
    return false;
#endif
  }();
  return available;
}

ShmSegment ShmSegment::create(size_t bytes, size_t allocatedBytes, bool anonymous) {
  ShmSegment segment;
  int fd = -1;
  if (anonymous) {
    fd = memfd_create("coll-shm", MFD_CLOEXEC);
    if (fd < 0) throwSystemError("memfd_create for shared memory");
    segment.memfd_ = fd;
    segment.locator_ = formatString("%s%d:%d", kMemfdPrefix, static_cast<int>(getpid()), fd);
  } else {
    for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
      segment.locator_ = randomSegmentName();
      fd = shm_open(segment.locator_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd < 0 && errno != EEXIST) throwSystemError(formatString("shm_open(%s)", segment.locator_.c_str()).c_str());
    }
    if (fd < 0) throwError(collSystemError, "shm_open: could not find an unused shared-memory name");
    segment.linked_ = true;
  }
  try {
    sizeSegment(fd, bytes, allocatedBytes, segment.locator_);
    segment.data_ = mapFd(fd, bytes, segment.locator_);
  } catch (...) {
    if (!anonymous) close(fd);
    throw;  // the segment's destructor unlinks the name or closes the memfd
  }
  segment.size_ = bytes;
  if (!anonymous) close(fd);
  return segment;
}

ShmSegment ShmSegment::open(const std::string& locator, size_t bytes) {
  ShmSegment segment;
  segment.locator_ = locator;
  int fd = -1;
  if (locator.compare(0, sizeof(kMemfdPrefix) - 1, kMemfdPrefix) == 0) {
    long pid = 0, peerFd = 0;
    if (!parseMemfdLocator(locator, &pid, &peerFd))
      throwError(collRemoteError, "a rank sent a malformed shared-memory locator \"%.64s\"", locator.c_str());
    fd = takePeerDescriptor(pid, peerFd, locator);
  } else {
    if (locator.size() < 2 || locator.size() > 255 || locator[0] != '/' || locator.find('/', 1) != std::string::npos)
      throwError(collRemoteError, "a rank sent a malformed shared-memory name \"%.64s\"", locator.c_str());
    fd = shm_open(locator.c_str(), O_RDWR, 0);
    if (fd < 0) throwSystemError(formatString("shm_open(%s) of a peer's segment", locator.c_str()).c_str());
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    close(fd);
    throwError(collRemoteError, "shared-memory segment %s has %lld bytes, expected %zu", locator.c_str(),
               static_cast<long long>(st.st_size), bytes);
  }
  try {
    segment.data_ = mapFd(fd, bytes, locator);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  segment.size_ = bytes;
  return segment;
}

void ShmSegment::allocate(size_t offset, size_t bytes, const char* what) const {
  if (offset > size_ || bytes > size_ - offset)
    throwError(collInternalError, "shared memory: %s at %zu+%zu lies outside the %zu-byte segment", what, offset, bytes,
               size_);
  // MADV_POPULATE_WRITE (Linux 5.14) allocates the pages through the mapping, so either end of a
  // FIFO can do it without the segment's descriptor, which is closed once mapped; it reports a
  // full /dev/shm as an error where touching the pages would raise SIGBUS.
  char* start = static_cast<char*>(data_) + offset;
  if (madvise(start, bytes, kMadvPopulateWrite) == 0) return;
  if (errno != EINVAL) {
    throwSystemError(
        formatString("allocating %zu bytes of shared memory for %s (is /dev/shm full?)", bytes, what).c_str());
  }
  // An older kernel: fault the pages in by hand. An atomic add of zero changes nothing, even
  // where the other end already uses the page. (A full /dev/shm then shows as SIGBUS.)
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t at = 0; at < bytes; at += page)
    __atomic_fetch_add(reinterpret_cast<uint64_t*>(start + at), 0, __ATOMIC_RELAXED);
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept { *this = std::move(other); }

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    release();
    locator_ = std::move(other.locator_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    linked_ = std::exchange(other.linked_, false);
    memfd_ = std::exchange(other.memfd_, -1);
  }
  return *this;
}

ShmSegment::~ShmSegment() { release(); }

void ShmSegment::releaseLocator() {
  if (linked_) {
    shm_unlink(locator_.c_str());
    linked_ = false;
  }
  if (memfd_ >= 0) {
    close(memfd_);
    memfd_ = -1;
  }
}

void ShmSegment::release() {
  releaseLocator();
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace transport
}  // namespace coll
