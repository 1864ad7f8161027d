// The namespace that keeps each instruction-set build of the host kernels apart.
//
// kernels/cpu/isa/*.cc compile the same reduce loops several times, each with its own -m flags
// (generic, AVX2, AVX-512), and the dispatcher picks one at run time. Inline functions and template
// instantiations are emitted in every object that uses them, and the linker keeps one copy per
// name: if the AVX-512 object and a baseline one both emitted halfToFloat, say, baseline code could
// end up calling the AVX-512 copy and die with SIGILL on an older CPU. So every header whose
// inline code a variant compiles opens `inline namespace COLL_ISA_NAMESPACE`: each variant file
// names itself (COLL_KERNEL_ISA) before its first include, and all other code shares `baseline`.
// Inline, so callers still write coll::kernels::halfToFloat.
#pragma once

#if defined(COLL_KERNEL_ISA)
#define COLL_ISA_NAMESPACE COLL_KERNEL_ISA
#else
#define COLL_ISA_NAMESPACE baseline
#endif
