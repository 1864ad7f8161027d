#include "guarded_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <stdexcept>

#include "reference.h"

namespace colltest {
namespace {

constexpr size_t kPageBytes = 4096;
constexpr size_t kMinGuardBytes = 64 << 10;

size_t roundUpToPage(size_t bytes) { return (bytes + kPageBytes - 1) / kPageBytes * kPageBytes; }

// The first and last byte of [base, base + bytes) that lost its poison, or bytes when none did.
size_t firstDamaged(const uint8_t* base, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i)
    if (!isPoisoned(base + i, 1)) return i;
  return bytes;
}
size_t lastDamaged(const uint8_t* base, size_t bytes) {
  for (size_t i = bytes; i > 0; --i)
    if (!isPoisoned(base + i - 1, 1)) return i - 1;
  return bytes;
}

}  // namespace

GuardedMemory::GuardedMemory(size_t bytes, size_t misalign) : bytes_(bytes) {
  // Twice the buffer on each side: a peer whose count is double this rank's writes at most one
  // buffer's length past it, and each guard holds that with room to spare.
  guardBytes_ = roundUpToPage(std::max(kMinGuardBytes, 2 * bytes + misalign));
  mapBytes_ = 2 * guardBytes_ + roundUpToPage(bytes + misalign);
  void* map = mmap(nullptr, mapBytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) throw std::runtime_error("GuardedMemory: mmap failed");
  map_ = static_cast<uint8_t*>(map);
  data_ = map_ + guardBytes_ + misalign % 64;
  poison(map_, mapBytes_);
}

GuardedMemory::~GuardedMemory() { munmap(map_, mapBytes_); }

bool GuardedMemory::intact() const {
  const uint8_t* end = data_ + bytes_;
  return isPoisoned(map_, static_cast<size_t>(data_ - map_)) && isPoisoned(end, mapBytes_ - (end - map_));
}

std::string GuardedMemory::damage(const char* name) const {
  std::string text;
  const size_t before = static_cast<size_t>(data_ - map_);
  const size_t first = firstDamaged(map_, before);
  if (first < before) text += "wrote " + std::to_string(before - first) + " bytes before the start of the " + name + "; ";
  const uint8_t* end = data_ + bytes_;
  const size_t after = mapBytes_ - static_cast<size_t>(end - map_);
  const size_t last = lastDamaged(end, after);
  if (last < after) {
    text += "wrote up to " + std::to_string(last + 1) + " bytes past the end of the " + name + " (its " +
            std::to_string(bytes_) + " bytes); ";
  }
  return text;
}

}  // namespace colltest
