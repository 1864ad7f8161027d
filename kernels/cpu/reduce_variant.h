// What one instruction-set build of the host reduce loops (kernels/cpu/isa/) hands the dispatcher
// (host_kernels.cc): a table of loops indexed by type and op. Plain declarations and no inline
// code, so the variants and the baseline code can all include it.
#pragma once

#include <cstddef>

#include "collective.h"

namespace coll {
namespace kernels {

// dsts[j][i] = srcs[0][i] op ... op srcs[nsrcs-1][i] for i < count, for one (type, op); the
// arguments are reduceCopy's, already checked by it.
using ReduceLoop = void (*)(const void* const* srcs, int nsrcs, void* const* dsts, int ndsts, size_t count,
                            int divisor);

// Columns: sum, prod, max, min (collRedOp_t order), then sum followed by the avg division.
constexpr int kDividingSum = 4;
constexpr int kLoopsPerType = 5;

struct ReduceLoopTable {
  const ReduceLoop* rows[collNumTypes];  // rows[type][column], rows in collDataType_t order
  size_t vectorBytes;                    // the width the loops work in: 16, 32 or 64 bytes
};

// One table per variant, each defined in kernels/cpu/isa/<variant>.cc. The avx2 and avx512 ones are
// built on x86-64 only (cmake/isa_variants.cmake defines COLL_KERNEL_X86_VARIANTS there).
extern const ReduceLoopTable genericReduceLoops;
extern const ReduceLoopTable avx2ReduceLoops;
extern const ReduceLoopTable avx512ReduceLoops;

}  // namespace kernels
}  // namespace coll
