// The host reduce loops for every CPU of the architecture: the compiler's baseline (SSE2 and
// 16-byte vectors on x86-64).
#define COLL_KERNEL_ISA generic
#include "kernels/cpu/reduce_loop_table.h"

const coll::kernels::ReduceLoopTable coll::kernels::genericReduceLoops = coll::kernels::generic::kReduceLoops;
