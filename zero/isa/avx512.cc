// The ZeRO optimizer loops for x86-64 CPUs with AVX-512 F, BW, VL and DQ (Skylake-SP, Zen 4 and
// later): 64-byte vectors and masked tails. cmake/isa_variants.cmake compiles this file with the
// host kernels' avx512 flags; it runs where they run (kernels/cpu/host_kernels.cc decides).
#define COLL_KERNEL_ISA avx512
#include "zero/optimizer_loops.h"

#if !defined(__AVX512F__)
#error "this file must be compiled with -mavx512f"
#endif

const coll::zero::OptimizerLoops coll::zero::avx512OptimizerLoops = coll::zero::avx512::kOptimizerLoops;
