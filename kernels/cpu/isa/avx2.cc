// The host reduce loops for x86-64 CPUs with AVX2, FMA and F16C (Haswell, Zen and later): 32-byte
// vectors and hardware half conversions. cmake/isa_variants.cmake compiles this file with
// -mavx2 -mfma -mf16c; host_kernels.cc runs it only where the CPU has all three.
#define COLL_KERNEL_ISA avx2
#include "kernels/cpu/reduce_loop_table.h"

static_assert(coll::kernels::avx2::detail::kVectorBytes >= 32, "this file must be compiled with -mavx2");

const coll::kernels::ReduceLoopTable coll::kernels::avx2ReduceLoops = coll::kernels::avx2::kReduceLoops;
