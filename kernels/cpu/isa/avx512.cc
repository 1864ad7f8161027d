// The host reduce loops for x86-64 CPUs with AVX-512 F, BW, VL and DQ (Skylake-SP, Zen 4 and
// later): 64-byte vectors, masked tails and AVX-512 half and bfloat16 conversions.
// cmake/isa_variants.cmake compiles this file with those -m flags (plus AVX2, FMA and F16C);
// host_kernels.cc runs it only where the CPU has all of them.
#define COLL_KERNEL_ISA avx512
#include "kernels/cpu/reduce_loop_table.h"

static_assert(coll::kernels::avx512::detail::kVectorBytes == 64, "this file must be compiled with -mavx512f");

const coll::kernels::ReduceLoopTable coll::kernels::avx512ReduceLoops = coll::kernels::avx512::kReduceLoops;
