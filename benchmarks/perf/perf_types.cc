#include "perf_types.h"

namespace collperf {

const std::vector<TypeInfo>& allTypes() {
  static const std::vector<TypeInfo> types = {
      {"int8", collInt8, 1, true, false, 0},           {"uint8", collUint8, 1, false, false, 0},
      {"int32", collInt32, 4, true, false, 0},         {"uint32", collUint32, 4, false, false, 0},
      {"int64", collInt64, 8, true, false, 0},         {"uint64", collUint64, 8, false, false, 0},
      {"half", collFloat16, 2, true, true, 0x1p-11},   {"float", collFloat32, 4, true, true, 0x1p-24},
      {"double", collFloat64, 8, true, true, 0x1p-53}, {"bfloat16", collBfloat16, 2, true, true, 0x1p-8},
  };
  return types;
}

const std::vector<OpInfo>& allOps() {
  static const std::vector<OpInfo> ops = {
      {"sum", collSum}, {"prod", collProd}, {"max", collMax}, {"min", collMin}, {"avg", collAvg}};
  return ops;
}

const TypeInfo* findType(const std::string& name) {
  // nccl-tests' aliases too.
  std::string n = name;
  if (n == "char") n = "int8";
  if (n == "int") n = "int32";
  if (n == "float16" || n == "fp16") n = "half";
  if (n == "float32" || n == "fp32") n = "float";
  if (n == "float64" || n == "fp64") n = "double";
  if (n == "bf16") n = "bfloat16";
  for (const auto& t : allTypes()) {
    if (n == t.name) return &t;
  }
  return nullptr;
}

const OpInfo* findOp(const std::string& name) {
  for (const auto& o : allOps()) {
    if (name == o.name) return &o;
  }
  return nullptr;
}

const TypeInfo& typeInfo(collDataType_t type) {
  for (const auto& t : allTypes()) {
    if (t.type == type) return t;
  }
  return allTypes()[7];
}

uint16_t floatToHalfBits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t absBits = u & 0x7fffffffu;
  if (absBits > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (absBits >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  int exp = static_cast<int>(absBits >> 23) - 127 + 15;
  uint32_t mant = absBits & 0x7fffffu;
  if (exp <= 0) {  // subnormal half (or zero)
    if (exp < -10) return sign;
    mant |= 0x800000u;
    int shift = 14 - exp;
    uint32_t half = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent: fine
  return static_cast<uint16_t>(sign | half);
}

float halfBitsToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  } else if (mant == 0) {
    u = sign;
  } else {  // subnormal: value = mant * 2^-24
    float f = std::ldexp(static_cast<float>(mant), -24);
    return sign != 0 ? -f : f;
  }
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

}  // namespace collperf
