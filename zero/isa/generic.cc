// The ZeRO optimizer loops for every CPU of the architecture: the compiler's baseline (SSE2 and
// 16-byte vectors on x86-64).
#define COLL_KERNEL_ISA generic
#include "zero/optimizer_loops.h"

const coll::zero::OptimizerLoops coll::zero::genericOptimizerLoops = coll::zero::generic::kOptimizerLoops;
