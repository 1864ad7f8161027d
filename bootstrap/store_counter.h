// How Store::add() keeps a counter inside a value: decimal ASCII text, as torch's TCPStore does.
// Every Store implementation uses these two functions so that a counter written by one and read
// with get() from another (or by a person debugging a dump) means the same number.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "bootstrap/store.h"

namespace coll {
namespace bootstrap {

inline Bytes encodeCounter(int64_t value) {
  std::string text = std::to_string(value);
  return Bytes(text.begin(), text.end());
}

// False when the value is not a decimal int64 (so add() on it is a usage error).
inline bool decodeCounter(const Bytes& value, int64_t* result) {
  if (value.empty() || value.size() > 20) return false;
  std::string text(value.begin(), value.end());
  for (size_t i = 0; i < text.size(); ++i) {
    bool digit = text[i] >= '0' && text[i] <= '9';
    if (!digit && !(i == 0 && text[i] == '-' && text.size() > 1)) return false;
  }
  errno = 0;
  long long parsed = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  *result = static_cast<int64_t>(parsed);
  return true;
}

// The new counter value after adding delta to the stored value (0 when absent); false when the
// stored value is not a counter or the sum overflows.
inline bool addToCounter(const Bytes* stored, int64_t delta, int64_t* result) {
  int64_t current = 0;
  if (stored != nullptr && !decodeCounter(*stored, &current)) return false;
  return !__builtin_add_overflow(current, delta, result);
}

}  // namespace bootstrap
}  // namespace coll
