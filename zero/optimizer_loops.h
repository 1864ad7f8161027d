// The element loops of the ZeRO optimizer steps and the gradient norm, as one table for one
// instruction-set variant. Only zero/isa/*.cc include this, each after naming its variant
// (COLL_KERNEL_ISA), so everything here lands in that variant's namespace (isa_namespace.h says
// why), and each compiles it with its own -m flags (cmake/isa_variants.cmake).
//
// Each step follows torch.optim's arithmetic for one tensor (float32, scalars rounded to float
// where torch rounds them: stepScalarsOf), so that a sharded run matches an unsharded torch run to
// rounding. The device kernel computes the same, element by element (step_element.h). One
// branch-free loop updates parameters and state, which the compiler vectorizes as wide as the
// variant allows (these files are built with -fno-math-errno so that sqrt vectorizes too), a block
// at a time: a 16-bit gradient is widened into a float block first (a float32 one is read in
// place), and the low-precision copy is written from the block while it is still in L1.
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
#include <cstring>

#include "collective_zero.h"
#include "kernels/cpu/half.h"
#include "kernels/cpu/isa_namespace.h"
#include "kernels/cpu/reduce_ops.h"
#include "zero/optimizer_variant.h"
#include "zero/step_scalars.h"

namespace coll {
namespace zero {
inline namespace COLL_ISA_NAMESPACE {
namespace detail {

// Small enough that a block of every array the step touches (parameters, gradient, both moments,
// the low-precision copy, the widened gradient) stays in L1 from one pass over it to the next,
// whatever the arrays' alignment to each other (docs/performance.md, "The host step of ZeRO-Offload").
constexpr size_t kBlock = 256;

using kernels::detail::Bfloat16Codec;
using kernels::detail::HalfCodec;
using kernels::detail::Vec;

// The 16-bit types convert a vector at a time with the host reduce kernels' codecs (a loop of the
// scalar conversions does not vectorize: half's has branches), and the elements after the last
// whole vector with these, which give the same bits (tests/kernels checks them against each other).
inline float toFloat(HalfCodec, uint16_t x) { return kernels::halfToFloat(x); }
inline float toFloat(Bfloat16Codec, uint16_t x) { return kernels::bfloat16ToFloat(x); }
inline uint16_t fromFloat(HalfCodec, float x) { return kernels::floatToHalf(x); }
inline uint16_t fromFloat(Bfloat16Codec, float x) { return kernels::floatToBfloat16(x); }

template <typename Codec>
inline void widen(const uint16_t* in, size_t n, float scale, float* out) {
  size_t i = 0;
  for (; i + Codec::kLanes <= n; i += Codec::kLanes) {
    const Vec<float> v = Codec::load(reinterpret_cast<const unsigned char*>(in + i)) * scale;
    std::memcpy(out + i, &v, sizeof v);
  }
  for (; i < n; ++i) out[i] = toFloat(Codec{}, in[i]) * scale;
}

template <typename Codec>
inline void narrow(const float* in, size_t n, uint16_t* out) {
  size_t i = 0;
  for (; i + Codec::kLanes <= n; i += Codec::kLanes) {
    Vec<float> v;
    std::memcpy(&v, in + i, sizeof v);
    Codec::store(v, reinterpret_cast<unsigned char*>(out + i));
  }
  for (; i < n; ++i) out[i] = fromFloat(Codec{}, in[i]);
}

// Widens n gradient elements of `type` (starting at element `first`) into out, times scale.
inline void loadGradients(const void* grad, collDataType_t type, size_t first, size_t n, float scale, float* out) {
  if (type == collFloat32) {
    const float* g = static_cast<const float*>(grad) + first;
    for (size_t i = 0; i < n; ++i) out[i] = g[i] * scale;
    return;
  }
  const uint16_t* g = static_cast<const uint16_t*>(grad) + first;
  if (type == collBfloat16) {
    widen<Bfloat16Codec>(g, n, scale, out);
  } else {
    widen<HalfCodec>(g, n, scale, out);
  }
}

inline void storeLowPrecision(const float* master, size_t n, collDataType_t type, uint16_t* out) {
  if (type == collBfloat16) {
    narrow<Bfloat16Codec>(master, n, out);
  } else {
    narrow<HalfCodec>(master, n, out);
  }
}

// How weight decay enters Adam: none, added to the gradient (Adam), or scaling the parameter
// (AdamW). A template argument, so that each loop is branch-free and vectorizes.
enum class Decay { kNone, kToGradient, kDecoupled };

// torch.optim.Adam / AdamW (single-tensor form) on one block, in one pass: each element's decay,
// moments and update in the order torch applies them to the whole tensor, so the same roundings.
// g is the block's gradient, not yet scaled (a float32 gradient is read where it lies: staging it
// through a block buffer first costs a second pass and slows this memory-bound loop). The scalars
// come by value: a local copy that no store through the arrays can change, so the loop keeps them
// in registers. kDivideByBias2 false leaves out the division by bias2Sqrt once that has rounded
// to 1 (after a few hundred steps at beta2 0.95, some 17 thousand at 0.999), where it changes no
// bit: one of an element's two divisions, which tell where the shard is in cache.
template <Decay kDecay, bool kDivideByBias2>
inline void adamBlock(const StepScalars s, float* __restrict p, const float* __restrict g, float* __restrict m,
                      float* __restrict v, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float parameter = p[i];
    float gradient = g[i] * s.gradScale;
    if constexpr (kDecay == Decay::kDecoupled) parameter *= s.decayFactor;
    if constexpr (kDecay == Decay::kToGradient) gradient += parameter * s.weightDecay;
    m[i] = m[i] * s.beta1 + gradient * s.oneMinusBeta1;
    v[i] = v[i] * s.beta2 + gradient * gradient * s.oneMinusBeta2;
    float root = std::sqrt(v[i]);
    if constexpr (kDivideByBias2) root = root / s.bias2Sqrt;
    const float denom = root + s.eps;
    p[i] = parameter + -s.stepSize * (m[i] / denom);
  }
}

template <Decay kDecay>
inline void adamBlock(const StepScalars& s, float* p, const float* g, float* m, float* v, size_t n) {
  if (s.bias2Sqrt == 1.0f) {
    adamBlock<kDecay, false>(s, p, g, m, v, n);
  } else {
    adamBlock<kDecay, true>(s, p, g, m, v, n);
  }
}

inline void adamBlock(const StepScalars& s, float* p, const float* g, float* m, float* v, size_t n) {
  if (s.decoupled) {
    adamBlock<Decay::kDecoupled>(s, p, g, m, v, n);
  } else if (s.weightDecay != 0.0f) {
    adamBlock<Decay::kToGradient>(s, p, g, m, v, n);
  } else {
    adamBlock<Decay::kNone>(s, p, g, m, v, n);
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
    if (scalars.adam) {
      const float* gradient = g;
      if (gradType == collFloat32) {
        gradient = static_cast<const float*>(grad) + first;
      } else {
        loadGradients(grad, gradType, first, n, 1.0f, g);
      }
      adamBlock(scalars, master + first, gradient, state0 + first, state1 + first, n);
    } else {
      loadGradients(grad, gradType, first, n, scalars.gradScale, g);  // SGD rewrites its block
      sgdBlock(scalars, master + first, g, state0 == nullptr ? nullptr : state0 + first, n);
    }
    if (paramOut != nullptr) storeLowPrecision(master + first, n, paramType, static_cast<uint16_t*>(paramOut) + first);
  }
}

// Squared and summed in double: a float square overflows from |x| > 1.8e19 (finite float32 and
// bfloat16 values) and would flag finite data as non-finite. Element i goes into running sum
// i % kSumLanes, and the sums are added together at the end in a fixed order: independent chains
// that the compiler keeps in vector lanes (one chain would wait for each addition to finish), and
// the same additions in the same order in every variant, so the same bits (without -ffast-math
// nothing reorders them).
constexpr size_t kSumLanes = 16;
static_assert(kBlock % kSumLanes == 0, "a block's first element must go into sum 0");

// Adds the squares of x[0..n) into sums, x[i] into sums[i % kSumLanes].
inline void addSquares(const float* x, size_t n, double* sums) {
  size_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes)
    for (size_t lane = 0; lane < kSumLanes; ++lane) sums[lane] += double(x[i + lane]) * double(x[i + lane]);
  for (size_t lane = 0; i < n; ++i, ++lane) sums[lane] += double(x[i]) * double(x[i]);
}

inline double squaredNorm(const void* data, collDataType_t type, size_t count) {
  double sums[kSumLanes] = {};
  float g[kBlock];
  for (size_t first = 0; first < count; first += kBlock) {
    const size_t n = count - first < kBlock ? count - first : kBlock;
    if (type == collFloat32) {
      addSquares(static_cast<const float*>(data) + first, n, sums);  // read where they lie
    } else {
      loadGradients(data, type, first, n, 1.0f, g);
      addSquares(g, n, sums);
    }
  }
  for (size_t width = kSumLanes / 2; width > 0; width /= 2)
    for (size_t lane = 0; lane < width; ++lane) sums[lane] += sums[lane + width];
  return sums[0];
}

}  // namespace detail

constexpr OptimizerLoops kOptimizerLoops = {&detail::step, &detail::squaredNorm};

}  // namespace COLL_ISA_NAMESPACE
}  // namespace zero
}  // namespace coll
