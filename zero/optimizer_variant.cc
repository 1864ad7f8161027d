// Which build of the ZeRO optimizer loops runs: the one of the host kernels' variant.
#include "zero/optimizer_variant.h"

#include "common/error.h"

namespace coll {
namespace zero {
namespace {

// Indexed by kernels::IsaVariant; null where this architecture builds no such variant, which the
// host kernels then never list.
const OptimizerLoops* const kVariants[kernels::kIsaVariantCount] = {
    &genericOptimizerLoops,
#if defined(COLL_KERNEL_X86_VARIANTS)
    &avx2OptimizerLoops,
    &avx512OptimizerLoops,
#endif
};

}  // namespace

const OptimizerLoops& optimizerLoopsOf(const kernels::HostKernels& kernels) {
  const int index = static_cast<int>(kernels.isa);
  if (index < 0 || index >= kernels::kIsaVariantCount || kVariants[index] == nullptr)
    throwError(collInternalError, "no ZeRO optimizer loops for the %s host kernels", kernels.name);
  return *kVariants[index];
}

const OptimizerLoops& activeOptimizerLoops() {
  // Looked up once: after that every step is one predictable indirect call.
  static const OptimizerLoops& chosen = optimizerLoopsOf(kernels::activeHostKernels());
  return chosen;
}

}  // namespace zero
}  // namespace coll
