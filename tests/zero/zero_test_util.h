// Helpers shared by the ZeRO tests: typed buffers with a poisoned guard, roundings to half and
// bfloat16 that do not use the library's (half through the compiler's _Float16, bfloat16 by
// comparing the two neighbours) for checking the optimizer's low-precision copy, and the check that
// a call failed with collInvalidArgument and a message that names the function and the value.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "collective.h"
#include "collective_zero.h"
#include "kernels/cpu/half.h"
#include "tests/multirank/reference.h"

namespace zerotest {

// Sizes and names as the multi-rank tests' reference has them.
using colltest::typeName;
using colltest::typeSize;

// Bit casts (no rounding: the library's are as good as any).
using coll::kernels::bitsToFloat;
using coll::kernels::floatToBits;

// IEEE binary16, rounded to nearest even by the compiler's conversion (libgcc on x86).
inline uint16_t toHalf(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

inline float fromBfloat16(uint16_t bits) { return bitsToFloat(uint32_t(bits) << 16); }

// bfloat16 rounded to nearest even: the nearer of the two bfloat16 values around f (in double),
// the one with an even last bit on a tie; above the largest finite one the upper neighbour is 2^128.
inline uint16_t toBfloat16(float f) {
  const uint32_t u = floatToBits(f);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40u);
  const uint32_t down = u & 0xffff0000u;
  if (down == u) return uint16_t(u >> 16);
  const uint32_t up = down + 0x10000u;
  const double downValue = fromBfloat16(uint16_t(down >> 16));
  const double upValue =
      (up & 0x7fffffffu) == 0x7f800000u ? std::copysign(std::ldexp(1.0, 128), f) : double(bitsToFloat(up));
  const double toDown = std::fabs(double(f) - downValue), toUp = std::fabs(upValue - double(f));
  if (toDown < toUp) return uint16_t(down >> 16);
  if (toUp < toDown) return uint16_t(up >> 16);
  return ((down >> 16) & 1u) == 0 ? uint16_t(down >> 16) : uint16_t(up >> 16);
}

// Inputs and outputs are encoded as the multi-rank tests do; the rounding checks of the
// optimizer's low-precision copy use toHalf/toBfloat16 above, which are independent of the library.
using colltest::loadValue;
using colltest::storeValue;

// The relative precision of a floating-point type (one unit in the last place at 1).
inline double epsilonOf(collDataType_t type) {
  return type == collFloat16 ? std::ldexp(1.0, -10) : type == collBfloat16 ? std::ldexp(1.0, -7) : std::ldexp(1.0, -23);
}

constexpr unsigned char kPoison = 0xA7;  // no test value has it; finite in every float type
constexpr size_t kGuardElements = 8;     // poisoned elements after every buffer, to catch overruns

// `count` elements of `type` followed by a poisoned guard; starts poisoned.
class TypedBuffer {
 public:
  TypedBuffer(collDataType_t type, size_t count)
      : type_(type), count_(count), bytes_((count + kGuardElements) * typeSize(type), kPoison) {}
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  void* at(size_t index) { return bytes_.data() + index * typeSize(type_); }
  size_t count() const { return count_; }
  double get(size_t index) const { return loadValue(bytes_.data(), index, type_); }
  void set(size_t index, double v) { storeValue(bytes_.data(), index, type_, v); }
  // Whether element `index` has the same bytes as in `other` (a copy taken earlier).
  bool sameElement(const std::vector<unsigned char>& other, size_t index) const {
    const size_t es = typeSize(type_);
    return std::memcmp(bytes_.data() + index * es, other.data() + index * es, es) == 0;
  }
  bool guardIntact() const {
    for (size_t i = count_ * typeSize(type_); i < bytes_.size(); ++i)
      if (bytes_[i] != kPoison) return false;
    return true;
  }
  const std::vector<unsigned char>& bytes() const { return bytes_; }

 private:
  collDataType_t type_;
  size_t count_;
  std::vector<unsigned char> bytes_;
};

// Empty when rc is collInvalidArgument and collGetLastError names every piece; else what is wrong.
inline std::string invalidArgumentProblem(collResult_t rc, std::initializer_list<std::string> pieces) {
  const std::string message = collGetLastError(nullptr);
  if (rc != collInvalidArgument)
    return "returned " + std::to_string(int(rc)) + " instead of collInvalidArgument (message: " + message + ")";
  for (const auto& piece : pieces)
    if (message.find(piece) == std::string::npos) return "message \"" + message + "\" does not name \"" + piece + "\"";
  return "";
}

}  // namespace zerotest
