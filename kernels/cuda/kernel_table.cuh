// What the kernel tables (instantiations.cu, direct_instantiations.cu) share: the macros that
// expand one kernel template over type_op_table.h, the check of a (type, op) pair, and the
// occupancy query. Each table lives in its own translation unit, so the two compile side by side.
#pragma once

#include <cuda_runtime.h>

#include "collective.h"
#include "kernels/cuda/type_op_table.h"

// A table of COLL_TABLE_KERNEL<T, Op> for every (type, op): define COLL_TABLE_KERNEL, then
// `= {COLL_DEVICE_TYPES(COLL_TABLE_ROW)}`.
#define COLL_TABLE_ENTRY(T, op, Op) &COLL_TABLE_KERNEL<T, Op>,
#define COLL_TABLE_ROW(dtype, T) {COLL_DEVICE_OPS(COLL_TABLE_ENTRY, T)},

namespace coll {
namespace device {

inline bool validTypeOpPair(collDataType_t type, collRedOp_t op) {
  return static_cast<int>(type) >= 0 && type < collNumTypes && static_cast<int>(op) >= 0 && op < collNumOps;
}

// The fewest blocks of `threads` threads of any kernel of `table` one SM holds at once, folded
// into *least (-1: none yet); false when CUDA cannot say.
template <typename KernelFn>
bool foldTableBlocksPerSm(const KernelFn (&table)[collNumTypes][collNumOps], int threads, int* least) {
  for (int t = 0; t < collNumTypes; ++t)
    for (int o = 0; o < collNumOps; ++o) {
      int blocks = 0;
      if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, reinterpret_cast<const void*>(table[t][o]), threads,
                                                        0) != cudaSuccess)
        return false;
      if (*least < 0 || blocks < *least) *least = blocks;
    }
  return true;
}

}  // namespace device
}  // namespace coll
