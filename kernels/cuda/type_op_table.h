// The one table of (datatype, op) pairs the device kernels are instantiated for: every row of
// collDataType_t and every column of collRedOp_t, as X-macro lists. instantiations.cu expands it
// into the kernel table; the host tests expand it to check the functors for every pair. Adding a
// type or an op means adding it here, nowhere else.
#pragma once

#include <cstdint>

#include "collective.h"
#include "kernels/cuda/reduce_functors.h"

// X(datatype enumerator, storage type)
#define COLL_DEVICE_TYPES(X)           \
  X(collInt8, int8_t)                  \
  X(collUint8, uint8_t)                \
  X(collInt32, int32_t)                \
  X(collUint32, uint32_t)              \
  X(collInt64, int64_t)                \
  X(collUint64, uint64_t)              \
  X(collFloat16, ::coll::device::Half) \
  X(collFloat32, float)                \
  X(collFloat64, double)               \
  X(collBfloat16, ::coll::device::Bfloat16)

// X(storage type, op enumerator, operator); avg is the sum operator with the division at the final
// store, so its entry reuses the sum kernel.
#define COLL_DEVICE_OPS(X, T)            \
  X(T, collSum, ::coll::device::OpSum)   \
  X(T, collProd, ::coll::device::OpProd) \
  X(T, collMax, ::coll::device::OpMax)   \
  X(T, collMin, ::coll::device::OpMin)   \
  X(T, collAvg, ::coll::device::OpSum)

namespace coll {
namespace device {

// The lists follow the enums' order, so a table built from them is indexed by the enum values.
constexpr collDataType_t kTableTypes[] = {
#define COLL_LIST_TYPE(dtype, T) dtype,
    COLL_DEVICE_TYPES(COLL_LIST_TYPE)
#undef COLL_LIST_TYPE
};
constexpr collRedOp_t kTableOps[] = {
#define COLL_LIST_OP(T, op, Op) op,
    COLL_DEVICE_OPS(COLL_LIST_OP, float)
#undef COLL_LIST_OP
};
constexpr bool tableFollowsEnums() {
  if (sizeof(kTableTypes) / sizeof(kTableTypes[0]) != collNumTypes) return false;
  if (sizeof(kTableOps) / sizeof(kTableOps[0]) != collNumOps) return false;
  for (int t = 0; t < collNumTypes; ++t)
    if (kTableTypes[t] != t) return false;
  for (int o = 0; o < collNumOps; ++o)
    if (kTableOps[o] != o) return false;
  return true;
}
static_assert(tableFollowsEnums(), "the type x op table covers collDataType_t x collRedOp_t in enum order");

}  // namespace device
}  // namespace coll
