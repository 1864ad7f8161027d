// The element loops of the ZeRO optimizer steps and the gradient norm, as one table for one
// instruction-set variant. Only zero/isa/*.cc include this, each after naming its variant
// (COLL_KERNEL_ISA), so everything here lands in that variant's namespace (isa_namespace.h says
// why), and each compiles it with its own -m flags (cmake/isa_variants.cmake).
//
// Each step follows torch.optim's arithmetic for one tensor (float32, scalars rounded to float
// where torch rounds them: stepScalarsOf), so that a sharded run matches an unsharded torch run to
// rounding. The device kernel computes the same, element by element (step_element.h). The
// loops work on blocks: gradients of any type are widened into a float block first, then one
// branch-free loop per block updates parameters and state, which the compiler vectorizes as wide
// as the variant allows (these files are built with -fno-math-errno so that sqrt vectorizes too).
//
// Every variant computes the same bits: no FMA contraction (-ffp-contract=off for every variant),
// and sqrt and division are correctly rounded in every width, so only the speed differs. ZeRO
// relies on it: in stage 0 every rank updates every parameter itself, and a job whose hosts have
// different CPUs (one without AVX2, say) must still keep identical replicas (zero/README.md).
#pragma once

#if !defined(COLL_KERNEL_ISA)
#error "optimizer_loops.h belongs to the instruction-set variants: include it only from zero/isa/*.cc"
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "collective_zero.h"
#include "kernels/cpu/half.h"
#include "kernels/cpu/isa_namespace.h"
#include "zero/optimizer_variant.h"
#include "zero/step_scalars.h"

namespace coll {
namespace zero {
inline namespace COLL_ISA_NAMESPACE {
namespace detail {

constexpr size_t kBlock = 512;

// Widens n gradient elements of `type` (starting at element `first`) into out, times scale.
inline void loadGradients(const void* grad, collDataType_t type, size_t first, size_t n, float scale, float* out) {
  if (type == collFloat32) {
    const float* g = static_cast<const float*>(grad) + first;
    for (size_t i = 0; i < n; ++i) out[i] = g[i] * scale;
    return;
  }
  const uint16_t* g = static_cast<const uint16_t*>(grad) + first;
  if (type == collBfloat16) {
    for (size_t i = 0; i < n; ++i) out[i] = kernels::bfloat16ToFloat(g[i]) * scale;
  } else {
    for (size_t i = 0; i < n; ++i) out[i] = kernels::halfToFloat(g[i]) * scale;
  }
}

inline void storeLowPrecision(const float* master, size_t n, collDataType_t type, uint16_t* out) {
  if (type == collBfloat16) {
    for (size_t i = 0; i < n; ++i) out[i] = kernels::floatToBfloat16(master[i]);
  } else {
    for (size_t i = 0; i < n; ++i) out[i] = kernels::floatToHalf(master[i]);
  }
}

// torch.optim.Adam / AdamW (single-tensor form) on one block. The scalars come by value: a
// local copy that no store through the arrays can change, so the loops keep them in registers.
inline void adamBlock(const StepScalars s, float* __restrict p, float* __restrict g, float* __restrict m,
                      float* __restrict v, size_t n) {
  if (s.decoupled) {
    for (size_t i = 0; i < n; ++i) p[i] *= s.decayFactor;
  } else if (s.weightDecay != 0.0f) {
    for (size_t i = 0; i < n; ++i) g[i] += p[i] * s.weightDecay;
  }
  for (size_t i = 0; i < n; ++i) {
    m[i] = m[i] * s.beta1 + g[i] * s.oneMinusBeta1;
    v[i] = v[i] * s.beta2 + g[i] * g[i] * s.oneMinusBeta2;
    const float denom = std::sqrt(v[i]) / s.bias2Sqrt + s.eps;
    p[i] += -s.stepSize * (m[i] / denom);
  }
}

// torch.optim.SGD (single-tensor form) on one block; the momentum buffer starts as the first
// step's gradient, as torch's does.
inline void sgdBlock(const StepScalars s, float* __restrict p, float* __restrict g, float* __restrict buf, size_t n) {
  if (s.weightDecay != 0.0f) {
    for (size_t i = 0; i < n; ++i) g[i] += p[i] * s.weightDecay;
  }
  if (s.momentum != 0.0f) {
    if (s.firstStep) {
      for (size_t i = 0; i < n; ++i) buf[i] = g[i];
    } else {
      for (size_t i = 0; i < n; ++i) buf[i] = buf[i] * s.momentum + g[i] * s.oneMinusDampening;
    }
    if (s.nesterov) {
      for (size_t i = 0; i < n; ++i) g[i] += buf[i] * s.momentum;
    } else {
      for (size_t i = 0; i < n; ++i) g[i] = buf[i];
    }
  }
  for (size_t i = 0; i < n; ++i) p[i] += g[i] * -s.lr;
}

inline void step(const collZeroStepConfig_t& config, float* master, const void* grad, collDataType_t gradType,
                 float* state0, float* state1, void* paramOut, collDataType_t paramType, size_t count) {
  const StepScalars scalars = stepScalarsOf(config);
  float g[kBlock];
  for (size_t first = 0; first < count; first += kBlock) {
    const size_t n = count - first < kBlock ? count - first : kBlock;
    loadGradients(grad, gradType, first, n, scalars.gradScale, g);
    if (scalars.adam) {
      adamBlock(scalars, master + first, g, state0 + first, state1 + first, n);
    } else {
      sgdBlock(scalars, master + first, g, state0 == nullptr ? nullptr : state0 + first, n);
    }
    if (paramOut != nullptr) storeLowPrecision(master + first, n, paramType, static_cast<uint16_t*>(paramOut) + first);
  }
}

// Squared and summed in double: a float square overflows from |x| > 1.8e19 (finite float32 and
// bfloat16 values) and would flag finite data as non-finite. Without -ffast-math a float sum
// would not vectorize either (a serial chain), so double costs nothing; the serial chain also keeps
// the order of additions, and so the sum's bits, the same in every variant.
inline double squaredNorm(const void* data, collDataType_t type, size_t count) {
  double total = 0.0;
  float g[kBlock];
  for (size_t first = 0; first < count; first += kBlock) {
    const size_t n = count - first < kBlock ? count - first : kBlock;
    loadGradients(data, type, first, n, 1.0f, g);
    for (size_t i = 0; i < n; ++i) total += double(g[i]) * double(g[i]);
  }
  return total;
}

}  // namespace detail

constexpr OptimizerLoops kOptimizerLoops = {&detail::step, &detail::squaredNorm};

}  // namespace COLL_ISA_NAMESPACE
}  // namespace zero
}  // namespace coll
