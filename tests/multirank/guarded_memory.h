// A buffer with poisoned guard zones on both sides, each larger than the buffer itself, in memory
// of its own (mmap): a peer that writes past the buffer, even by a whole buffer's length, lands in
// a guard and is seen by intact(), instead of corrupting the test's heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace colltest {

class GuardedMemory {
 public:
  // `bytes` usable bytes (0 is allowed), starting at `misalign` bytes past a 64-byte boundary.
  explicit GuardedMemory(size_t bytes, size_t misalign = 0);
  ~GuardedMemory();
  GuardedMemory(const GuardedMemory&) = delete;
  GuardedMemory& operator=(const GuardedMemory&) = delete;

  uint8_t* data() { return data_; }
  size_t bytes() const { return bytes_; }
  // The whole mapping, guards included: what a copy of the buffer elsewhere (device memory) takes
  // so that writes past the buffer there land in guards too.
  uint8_t* region() { return map_; }
  size_t regionBytes() const { return mapBytes_; }
  // Whether both guards still hold the poison they were given.
  bool intact() const;
  // "" when intact, else which guard was written and how far from the buffer: "wrote 400000
  // bytes past the end of the receive buffer (its 8000 bytes)".
  std::string damage(const char* name) const;

 private:
  uint8_t* map_ = nullptr;
  size_t mapBytes_ = 0;
  uint8_t* data_ = nullptr;
  size_t bytes_ = 0;
  size_t guardBytes_ = 0;
};

}  // namespace colltest
