// The int a C caller stored in one of the API's enums (collDataType_t, collRedOp_t), read without
// loading it as the enum. C++ leaves loading a value outside the enumerators' range undefined
// (UBSan's -fsanitize=enum reports it), and such values are exactly what validation must see.
#pragma once

#include <cstring>

namespace coll {

template <typename Enum>
int enumBits(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int), "the API's enums are int-sized");
  int bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

}  // namespace coll
