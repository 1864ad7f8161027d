// A POSIX shared-memory segment created 0600 under an unpredictable name. The creator publishes
// the name through the bootstrap; peers map it; once everyone has mapped it the creator unlinks
// it, so nothing is left in /dev/shm even if the job is killed later.
#pragma once

#include <cstddef>
#include <string>

namespace coll {
namespace transport {

class ShmSegment {
 public:
  // Creates and maps a new zero-filled segment of `bytes`.
  static ShmSegment create(size_t bytes);
  // Maps an existing segment by name; `bytes` must match what the creator made.
  static ShmSegment open(const std::string& name, size_t bytes);

  ShmSegment() = default;
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();

  void unlink();  // removes the name; the mapping stays valid
  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  void release();
  std::string name_;
  void* data_ = nullptr;
  size_t size_ = 0;
  bool linked_ = false;
};

}  // namespace transport
}  // namespace coll
