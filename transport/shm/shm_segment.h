// A shared-memory segment, in one of two forms. Anonymous: a memfd that peers take from the
// creator's descriptor table with pidfd_getfd (it needs the right to ptrace the creator); it has
// no name, so nothing can be left behind by a crash. Named: a POSIX segment created 0600 under an
// unpredictable name, unlinked once every peer has mapped it. The creator publishes a locator
// ("memfd:PID:FD" or the name) through the bootstrap; peers open() it.
#pragma once

#include <cstddef>
#include <string>

namespace coll {
namespace transport {

class ShmSegment {
 public:
  // Creates and maps a new zero-filled segment of `bytes`, of which only the first
  // `allocatedBytes` get memory now; the rest is allocated range by range with allocate() when
  // first used (a FIFO when its connection is made), so that a segment sized for every possible
  // peer costs memory only for the peers actually used.
  static ShmSegment create(size_t bytes, size_t allocatedBytes, bool anonymous);
  // Maps another rank's segment from its locator; `bytes` must match what the creator made. The
  // locator comes from another process: it is parsed strictly.
  static ShmSegment open(const std::string& locator, size_t bytes);
  // Whether this process may open anonymous segments of others (pidfd_open and pidfd_getfd):
  // not on kernels before 5.6, nor where a seccomp profile or a tool refuses the calls (valgrind
  // answers ENOSYS). Probed once per process; the ranks of a host agree on the form (ShmDomain).
  static bool canTakePeerDescriptors();

  ShmSegment() = default;
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();

  // Gives [offset, offset+bytes) of this mapping (own or a peer's) its memory now, so that a full
  // /dev/shm fails here with a clear error instead of a SIGBUS in the middle of a collective.
  // Idempotent, and safe while other processes do the same or use pages already there: new pages
  // read as zero, pages already there are left as they are.
  void allocate(size_t offset, size_t bytes, const char* what) const;

  // Removes the name or closes the descriptor that peers open; the mapping stays valid.
  void releaseLocator();
  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& locator() const { return locator_; }

 private:
  void release();
  std::string locator_;
  void* data_ = nullptr;
  size_t size_ = 0;
  bool linked_ = false;  // a named segment whose name still exists
  int memfd_ = -1;       // an anonymous segment's descriptor, open until releaseLocator()
};

}  // namespace transport
}  // namespace coll
