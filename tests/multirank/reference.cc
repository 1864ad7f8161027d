#include "reference.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/half.h"

namespace colltest {

size_t typeSize(collDataType_t type) {
  switch (type) {
    case collInt8:
    case collUint8:
      return 1;
    case collFloat16:
    case collBfloat16:
      return 2;
    case collInt32:
    case collUint32:
    case collFloat32:
      return 4;
    default:
      return 8;
  }
}

const char* typeName(collDataType_t type) {
  static const char* names[] = {"int8",   "uint8", "int32", "uint32", "int64",
                                "uint64", "half",  "float", "double", "bfloat16"};
  return names[type];
}

const char* opName(collRedOp_t op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return names[op];
}

bool isFloatType(collDataType_t type) {
  return type == collFloat16 || type == collFloat32 || type == collFloat64 || type == collBfloat16;
}

static bool isUnsigned(collDataType_t type) { return type == collUint8 || type == collUint32 || type == collUint64; }

double inputValue(int rank, size_t index, collDataType_t type, collRedOp_t op) {
  size_t mix = index * 7 + static_cast<size_t>(rank) * 13 + 3;
  if (op == collProd) {
    // At most one rank per index contributes a 2, so products stay tiny; -1 flips signs.
    if (index % 8 == static_cast<size_t>(rank) % 8) return 2;
    if (!isUnsigned(type) && mix % 5 == 0) return -1;
    return 1;
  }
  if (isUnsigned(type)) return static_cast<double>(mix % 5);
  return static_cast<double>(static_cast<int>(mix % 5) - 2);
}

double reducedValue(int nranks, size_t index, collDataType_t type, collRedOp_t op) {
  double acc = inputValue(0, index, type, op);
  for (int r = 1; r < nranks; ++r) {
    double v = inputValue(r, index, type, op);
    switch (op) {
      case collSum:
      case collAvg:
        acc += v;
        break;
      case collProd:
        acc *= v;
        break;
      case collMax:
        acc = std::max(acc, v);
        break;
      case collMin:
        acc = std::min(acc, v);
        break;
      default:
        break;
    }
  }
  if (op == collAvg) {
    if (isFloatType(type)) return acc / nranks;
    return std::trunc(acc / nranks);  // C integer division of the exact sum
  }
  return acc;
}

// Elements are read and written through memcpy: the tests use buffers at odd addresses on
// purpose (the API allows any alignment), where a typed access would be undefined behaviour.
template <typename T>
void put(void* base, size_t index, T value) {
  std::memcpy(static_cast<unsigned char*>(base) + index * sizeof(T), &value, sizeof(T));
}

template <typename T>
T get(const void* base, size_t index) {
  T value;
  std::memcpy(&value, static_cast<const unsigned char*>(base) + index * sizeof(T), sizeof(T));
  return value;
}

void storeValue(void* base, size_t index, collDataType_t type, double v) {
  switch (type) {
    case collInt8:
      put<int8_t>(base, index, static_cast<int8_t>(v));
      break;
    case collUint8:
      put<uint8_t>(base, index, static_cast<uint8_t>(v));
      break;
    case collInt32:
      put<int32_t>(base, index, static_cast<int32_t>(v));
      break;
    case collUint32:
      put<uint32_t>(base, index, static_cast<uint32_t>(v));
      break;
    case collInt64:
      put<int64_t>(base, index, static_cast<int64_t>(v));
      break;
    case collUint64:
      put<uint64_t>(base, index, static_cast<uint64_t>(v));
      break;
    case collFloat16:
      put<uint16_t>(base, index, coll::kernels::floatToHalf(static_cast<float>(v)));
      break;
    case collFloat32:
      put<float>(base, index, static_cast<float>(v));
      break;
    case collFloat64:
      put<double>(base, index, v);
      break;
    case collBfloat16:
      put<uint16_t>(base, index, coll::kernels::floatToBfloat16(static_cast<float>(v)));
      break;
    default:
      break;
  }
}

double loadValue(const void* base, size_t index, collDataType_t type) {
  switch (type) {
    case collInt8:
      return get<int8_t>(base, index);
    case collUint8:
      return get<uint8_t>(base, index);
    case collInt32:
      return get<int32_t>(base, index);
    case collUint32:
      return get<uint32_t>(base, index);
    case collInt64:
      return static_cast<double>(get<int64_t>(base, index));
    case collUint64:
      return static_cast<double>(get<uint64_t>(base, index));
    case collFloat16:
      return coll::kernels::halfToFloat(get<uint16_t>(base, index));
    case collFloat32:
      return get<float>(base, index);
    case collFloat64:
      return get<double>(base, index);
    case collBfloat16:
      return coll::kernels::bfloat16ToFloat(get<uint16_t>(base, index));
    default:
      return NAN;
  }
}

static constexpr unsigned char kPoison = 0xA7;  // -89 as int8, a NaN-free odd pattern elsewhere

void poison(void* base, size_t bytes) { memset(base, kPoison, bytes); }

bool isPoisoned(const void* base, size_t bytes) {
  const unsigned char* p = static_cast<const unsigned char*>(base);
  for (size_t i = 0; i < bytes; ++i)
    if (p[i] != kPoison) return false;
  return true;
}

bool valueMatches(const void* base, size_t index, collDataType_t type, collRedOp_t op, double expected) {
  // Round the reference through the type first so both sides are what the type can hold.
  unsigned char tmp[8];
  storeValue(tmp, 0, type, expected);
  double want = loadValue(tmp, 0, type);
  double got = loadValue(base, index, type);
  if (got == want) return true;
  if (op == collAvg && isFloatType(type)) {
    double ulp = type == collFloat16    ? std::ldexp(1.0, -10)
                 : type == collBfloat16 ? std::ldexp(1.0, -7)
                 : type == collFloat32  ? std::ldexp(1.0, -23)
                                        : std::ldexp(1.0, -52);
    return std::fabs(got - want) <= ulp * std::max(1.0, std::fabs(want));
  }
  return false;
}

}  // namespace colltest
