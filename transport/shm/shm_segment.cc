#include "transport/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "src/error.h"

namespace coll {
namespace transport {
namespace {

std::string randomSegmentName() {
  unsigned char random[12];
  size_t filled = 0;
  while (filled < sizeof(random)) {
    ssize_t got = getrandom(random + filled, sizeof(random) - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    COLL_SYSCHECK(got, "getrandom for a shared-memory name");
    filled += static_cast<size_t>(got);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string name = "/coll-";
  for (unsigned char byte : random) {
    name += kHex[byte >> 4];
    name += kHex[byte & 15];
  }
  return name;
}

void* mapFd(int fd, size_t bytes, const std::string& name) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED)
    throwSystemError(formatString("mmap of shared memory %s (%zu bytes)", name.c_str(), bytes).c_str());
  return data;
}

}  // namespace

ShmSegment ShmSegment::create(size_t bytes) {
  ShmSegment segment;
  int fd = -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    segment.name_ = randomSegmentName();
    fd = shm_open(segment.name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno != EEXIST) throwSystemError(formatString("shm_open(%s)", segment.name_.c_str()).c_str());
  }
  if (fd < 0) throwError(collSystemError, "shm_open: could not find an unused shared-memory name");
  segment.linked_ = true;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    throwSystemError(
        formatString("ftruncate of %s to %zu bytes (is /dev/shm full?)", segment.name_.c_str(), bytes).c_str());
  }
  // Touch the pages now (posix_fallocate) so that a too-small /dev/shm fails here with a clear
  // error instead of a SIGBUS in the middle of a collective.
  int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    close(fd);
    errno = rc;
    throwSystemError(
        formatString("allocating %zu bytes of shared memory for %s (is /dev/shm full?)", bytes, segment.name_.c_str())
            .c_str());
  }
  segment.data_ = mapFd(fd, bytes, segment.name_);
  segment.size_ = bytes;
  close(fd);
  return segment;
}

ShmSegment ShmSegment::open(const std::string& name, size_t bytes) {
  ShmSegment segment;
  segment.name_ = name;
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) throwSystemError(formatString("shm_open(%s) of a peer's segment", name.c_str()).c_str());
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    close(fd);
    throwError(collRemoteError, "shared-memory segment %s has %lld bytes, expected %zu", name.c_str(),
               static_cast<long long>(st.st_size), bytes);
  }
  segment.data_ = mapFd(fd, bytes, name);
  segment.size_ = bytes;
  close(fd);
  return segment;
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept { *this = std::move(other); }

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    release();
    name_ = std::move(other.name_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    linked_ = std::exchange(other.linked_, false);
  }
  return *this;
}

ShmSegment::~ShmSegment() { release(); }

void ShmSegment::unlink() {
  if (linked_) {
    shm_unlink(name_.c_str());
    linked_ = false;
  }
}

void ShmSegment::release() {
  unlink();
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace transport
}  // namespace coll
