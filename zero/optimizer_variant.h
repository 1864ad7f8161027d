// What one instruction-set build of the ZeRO optimizer loops (zero/isa/) hands the entry points
// in optimizer_step.cc, and which build runs. Plain declarations and no inline code, so the
// variants and the baseline code can all include it.
//
// The variants are the host kernels' (kernels/cpu/host_kernels.h), chosen by the same single
// choice per process (COLL_CPU_KERNELS, else the fastest this CPU runs): one rule, one warning,
// and one name in the init line for every loop the library runs.
#pragma once

#include <cstddef>

#include "collective.h"
#include "collective_zero.h"
#include "kernels/cpu/host_kernels.h"

namespace coll {
namespace zero {

struct OptimizerLoops {
  // collZeroOptimizerStep's work, on arguments it has already checked.
  void (*step)(const collZeroStepConfig_t& config, float* master, const void* grad, collDataType_t gradType,
               float* state0, float* state1, void* paramOut, collDataType_t paramType, size_t count);
  // collZeroSquaredNorm's sum of squares, in double, on arguments it has already checked.
  double (*squaredNorm)(const void* data, collDataType_t type, size_t count);
};

// One table per variant, each defined in zero/isa/<variant>.cc. The avx2 and avx512 ones are
// built on x86-64 only (cmake/isa_variants.cmake).
extern const OptimizerLoops genericOptimizerLoops;
extern const OptimizerLoops avx2OptimizerLoops;
extern const OptimizerLoops avx512OptimizerLoops;

// The loops of the variant the host kernels run (kernels::activeHostKernels()).
const OptimizerLoops& activeOptimizerLoops();

// One given variant's loops, whatever the CPU: for the tests that compare variants. The caller
// checks kernels.cpuCanRun() first.
const OptimizerLoops& optimizerLoopsOf(const kernels::HostKernels& kernels);

}  // namespace zero
}  // namespace coll
