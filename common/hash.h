// FNV-1a, the one small non-cryptographic hash the library uses: host identities, digests of
// settings that every rank must share, and stretching a launcher's secret string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace coll {

class Fnv1a {
 public:
  Fnv1a& add(const void* data, size_t bytes) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) state_ = (state_ ^ p[i]) * 1099511628211ull;
    return *this;
  }
  // The value's 8 bytes, least significant first (the same on every little- or big-endian rank).
  Fnv1a& add(uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      unsigned char byte = static_cast<unsigned char>(value >> (8 * i));
      add(&byte, 1);
    }
    return *this;
  }
  // The length first, so that consecutive strings cannot run into each other.
  Fnv1a& add(const std::string& text) { return add(static_cast<uint64_t>(text.size())).add(text.data(), text.size()); }
  uint64_t value() const { return state_; }

 private:
  uint64_t state_ = 1469598103934665603ull;
};

}  // namespace coll
