// The element types and reduction operations the perf programs know, by their nccl-tests names,
// and per-type codecs: how to store a small integer in a type, read an element back as a double,
// and what "poison" value marks an output element the collective did not write.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "collective.h"

namespace collperf {

struct TypeInfo {
  const char* name;  // as nccl-tests prints it: "float", "half", "bfloat16", "int32", ...
  collDataType_t type;
  size_t size;
  bool isSigned;  // integers that can be negative, and every floating-point type
  bool isFloat;
  double unitRoundoff;  // 0 for integer types
};

struct OpInfo {
  const char* name;  // "sum", "prod", "max", "min", "avg"
  collRedOp_t op;
};

const std::vector<TypeInfo>& allTypes();
const std::vector<OpInfo>& allOps();
const TypeInfo* findType(const std::string& name);  // nullptr when unknown
const OpInfo* findOp(const std::string& name);
const TypeInfo& typeInfo(collDataType_t type);

// IEEE binary16 and bfloat16, as bit patterns (conversions round to nearest even).
struct Half {
  uint16_t bits;
};
struct Bfloat16 {
  uint16_t bits;
};

uint16_t floatToHalfBits(float f);
float halfBitsToFloat(uint16_t h);

inline uint16_t floatToBf16Bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16BitsToFloat(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

// Codec<T>: fromInt (exact for the small values the patterns use; integers wrap modulo 2^bits),
// toDouble, and poison (a value no pattern or expected result ever takes).
template <typename T>
struct Codec {
  static_assert(std::numeric_limits<T>::is_integer, "integer codec");
  static T fromInt(int64_t v) { return static_cast<T>(static_cast<uint64_t>(v)); }
  static double toDouble(T v) { return static_cast<double>(v); }
  static T poison() {
    return std::numeric_limits<T>::is_signed ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
  }
};

template <>
struct Codec<float> {
  static float fromInt(int64_t v) { return static_cast<float>(v); }
  static double toDouble(float v) { return v; }
  static float poison() { return std::numeric_limits<float>::quiet_NaN(); }
};

template <>
struct Codec<double> {
  static double fromInt(int64_t v) { return static_cast<double>(v); }
  static double toDouble(double v) { return v; }
  static double poison() { return std::numeric_limits<double>::quiet_NaN(); }
};

template <>
struct Codec<Half> {
  static Half fromInt(int64_t v) { return Half{floatToHalfBits(static_cast<float>(v))}; }
  static double toDouble(Half v) { return halfBitsToFloat(v.bits); }
  static Half poison() { return Half{0x7e00}; }
};

template <>
struct Codec<Bfloat16> {
  static Bfloat16 fromInt(int64_t v) { return Bfloat16{floatToBf16Bits(static_cast<float>(v))}; }
  static double toDouble(Bfloat16 v) { return bf16BitsToFloat(v.bits); }
  static Bfloat16 poison() { return Bfloat16{0x7fc0}; }
};

// Calls f(T{}) with the C++ type that stores `type`.
template <typename F>
auto withType(collDataType_t type, F&& f) {
  switch (type) {
    case collInt8:
      return f(int8_t{});
    case collUint8:
      return f(uint8_t{});
    case collInt32:
      return f(int32_t{});
    case collUint32:
      return f(uint32_t{});
    case collInt64:
      return f(int64_t{});
    case collUint64:
      return f(uint64_t{});
    case collFloat16:
      return f(Half{});
    case collFloat32:
      return f(float{});
    case collFloat64:
      return f(double{});
    case collBfloat16:
      return f(Bfloat16{});
    default:
      return f(float{});
  }
}

}  // namespace collperf
