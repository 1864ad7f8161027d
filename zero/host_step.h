// The host path of collZeroOptimizerStep once its arguments are checked: the element loops of
// the variant this process runs (optimizer_variant.h), over `threads` threads (step_threads.h).
#pragma once

#include <cstddef>

#include "collective_zero.h"

namespace coll {
namespace zero {

void stepOnHost(const collZeroStepConfig_t& config, float* master, const void* grad, collDataType_t gradType,
                float* state0, float* state1, void* paramOut, collDataType_t paramType, size_t count, int threads);

}  // namespace zero
}  // namespace coll
