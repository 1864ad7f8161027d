// The ZeRO optimizer loops for x86-64 CPUs with AVX2, FMA and F16C (Haswell, Zen and later):
// 32-byte vectors. cmake/isa_variants.cmake compiles this file with the host kernels' avx2 flags;
// it runs where they run (kernels/cpu/host_kernels.cc decides).
#define COLL_KERNEL_ISA avx2
#include "zero/optimizer_loops.h"

#if !defined(__AVX2__)
#error "this file must be compiled with -mavx2"
#endif

const coll::zero::OptimizerLoops coll::zero::avx2OptimizerLoops = coll::zero::avx2::kOptimizerLoops;
