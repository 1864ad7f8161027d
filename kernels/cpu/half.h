// Scalar conversions between float and the 16-bit float formats (IEEE binary16 "half" and
// bfloat16), rounding to nearest even. Portable C++ with no intrinsics on purpose: the reduce
// kernels use F16C where their variant targets it, and the tests check them against these.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/cpu/isa_namespace.h"

namespace coll {
namespace kernels {
// Each instruction-set variant of the reduce kernels inlines these with its own flags, so each
// gets its own namespace (isa_namespace.h); all other code shares coll::kernels::baseline.
inline namespace COLL_ISA_NAMESPACE {

inline uint32_t floatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Exact: every half value is a float. NaN payloads are kept (shifted into the high mantissa bits).
inline float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Subnormal or zero: mantissa * 2^-24, which float holds exactly.
    const float magnitude = float(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  // Rebias the exponent from 15 to 127.
  return bitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline uint16_t floatToHalf(float f) {
  const uint32_t bits = floatToBits(f);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {
    // NaN: keep the top payload bits and force the quiet bit so a payload that lived only in the
    // low bits cannot turn into infinity.
    return uint16_t(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  // 65520 is the midpoint between 65504 (the largest half, odd mantissa) and 2^16; the tie goes to
  // the even neighbour, which is infinity.
  if (magnitude >= 0x477ff000u) return uint16_t(sign | 0x7c00u);
  if (magnitude >= 0x38800000u) {
    // Normal half. Adding 0xfff plus the lowest kept bit rounds to nearest even at bit 13; a
    // mantissa that rounds up past all ones carries into the exponent, which is the right result.
    const uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
  }
  // Below 2^-25 everything rounds to zero (2^-25 itself is a tie that goes to the even zero).
  const uint32_t exponent = magnitude >> 23;
  if (exponent < 102) return sign;
  // Subnormal half: the result is round(x * 2^24) as an integer mantissa.
  const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // 14..24
  uint32_t result = significand >> shift;
  const uint32_t remainder = significand & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
  // A carry to 0x400 is the smallest normal half, which that encoding already is.
  return uint16_t(sign | result);
}

inline float bfloat16ToFloat(uint16_t b) { return bitsToFloat(uint32_t(b) << 16); }

// Branch-free on the bit pattern so that the vector kernels can use the same expression.
inline uint16_t bfloat16FromBits(uint32_t bits) {
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  // NaN: truncate and set the quiet bit; rounding could carry a NaN into infinity.
  const uint32_t quietNan = (bits >> 16) | 0x40u;
  return uint16_t((bits & 0x7fffffffu) > 0x7f800000u ? quietNan : rounded);
}

inline uint16_t floatToBfloat16(float f) { return bfloat16FromBits(floatToBits(f)); }

}  // namespace COLL_ISA_NAMESPACE
}  // namespace kernels
}  // namespace coll
