// The sharded optimizer steps (collZeroOptimizerStep) and the gradient norm (collZeroSquaredNorm).
//
// Each step follows torch.optim's arithmetic for one tensor (float32, scalars rounded to float
// where torch rounds them), so that a sharded run matches an unsharded torch run to rounding. The
// loops work on blocks: gradients of any type are widened into a float block first, then one
// branch-free loop per block updates parameters and state, which the compiler vectorizes (this
// file is built with -fno-math-errno so that sqrt vectorizes too).
#include <cmath>
#include <cstdint>

#include "collective_zero.h"
#include "common/error.h"
#include "kernels/cpu/half.h"
#include "src/api_internal.h"
#include "src/zero/partition.h"

namespace coll {
namespace zero {
namespace {

constexpr size_t kBlock = 512;

// Widens n gradient elements of `type` (starting at element `first`) into out, times scale.
void loadGradients(const void* grad, collDataType_t type, size_t first, size_t n, float scale, float* out) {
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

void storeLowPrecision(const float* master, size_t n, collDataType_t type, uint16_t* out) {
  if (type == collBfloat16) {
    for (size_t i = 0; i < n; ++i) out[i] = kernels::floatToBfloat16(master[i]);
  } else {
    for (size_t i = 0; i < n; ++i) out[i] = kernels::floatToHalf(master[i]);
  }
}

// torch.optim.Adam / AdamW (single-tensor form) on one block.
struct AdamBlock {
  float beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps, weightDecay, decayFactor, stepSize, bias2Sqrt;
  bool decoupled;

  explicit AdamBlock(const collZeroStepConfig_t& c)
      : beta1(float(c.beta1)),
        oneMinusBeta1(float(1.0 - c.beta1)),
        beta2(float(c.beta2)),
        oneMinusBeta2(float(1.0 - c.beta2)),
        eps(float(c.eps)),
        weightDecay(float(c.weightDecay)),
        decayFactor(float(1.0 - c.lr * c.weightDecay)),
        stepSize(float(c.lr / (1.0 - std::pow(c.beta1, double(c.step))))),
        bias2Sqrt(float(std::sqrt(1.0 - std::pow(c.beta2, double(c.step))))),
        decoupled(c.optimizer == collZeroAdamW) {}

  void run(float* __restrict p, float* __restrict g, float* __restrict m, float* __restrict v, size_t n) const {
    if (decoupled) {
      for (size_t i = 0; i < n; ++i) p[i] *= decayFactor;
    } else if (weightDecay != 0.0f) {
      for (size_t i = 0; i < n; ++i) g[i] += p[i] * weightDecay;
    }
    for (size_t i = 0; i < n; ++i) {
      m[i] = m[i] * beta1 + g[i] * oneMinusBeta1;
      v[i] = v[i] * beta2 + g[i] * g[i] * oneMinusBeta2;
      const float denom = std::sqrt(v[i]) / bias2Sqrt + eps;
      p[i] += -stepSize * (m[i] / denom);
    }
  }
};

// torch.optim.SGD (single-tensor form) on one block; the momentum buffer starts as the first
// step's gradient, as torch's does.
struct SgdBlock {
  float lr, momentum, oneMinusDampening, weightDecay;
  bool nesterov, firstStep;

  explicit SgdBlock(const collZeroStepConfig_t& c)
      : lr(float(c.lr)),
        momentum(float(c.momentum)),
        oneMinusDampening(float(1.0 - c.dampening)),
        weightDecay(float(c.weightDecay)),
        nesterov(c.nesterov != 0),
        firstStep(c.step == 1) {}

  void run(float* __restrict p, float* __restrict g, float* __restrict buf, size_t n) const {
    if (weightDecay != 0.0f) {
      for (size_t i = 0; i < n; ++i) g[i] += p[i] * weightDecay;
    }
    if (momentum != 0.0f) {
      if (firstStep) {
        for (size_t i = 0; i < n; ++i) buf[i] = g[i];
      } else {
        for (size_t i = 0; i < n; ++i) buf[i] = buf[i] * momentum + g[i] * oneMinusDampening;
      }
      if (nesterov) {
        for (size_t i = 0; i < n; ++i) g[i] += buf[i] * momentum;
      } else {
        for (size_t i = 0; i < n; ++i) g[i] = buf[i];
      }
    }
    for (size_t i = 0; i < n; ++i) p[i] += g[i] * -lr;
  }
};

void checkStepConfig(const char* function, const collZeroStepConfig_t* c) {
  if (c == nullptr) throwError(collInvalidArgument, "%s: config is NULL: expected a collZeroStepConfig_t", function);
  if (c->optimizer < 0 || c->optimizer >= collZeroNumOptimizers)
    throwError(collInvalidArgument, "%s: config->optimizer %d: expected collZeroAdam, collZeroAdamW or collZeroSgd",
               function, static_cast<int>(c->optimizer));
  if (!(c->lr >= 0.0) || !std::isfinite(c->lr))
    throwError(collInvalidArgument, "%s: config->lr %g: expected a finite value >= 0", function, c->lr);
  if (c->step < 1) throwError(collInvalidArgument, "%s: config->step %lld: expected >= 1", function, c->step);
  if (!std::isfinite(c->gradScale))
    throwError(collInvalidArgument, "%s: config->gradScale %g: expected a finite value", function, c->gradScale);
  if (!std::isfinite(c->weightDecay) || c->weightDecay < 0.0)
    throwError(collInvalidArgument, "%s: config->weightDecay %g: expected a finite value >= 0", function,
               c->weightDecay);
  if (c->optimizer == collZeroSgd) {
    if (!std::isfinite(c->momentum) || c->momentum < 0.0 || !std::isfinite(c->dampening))
      throwError(collInvalidArgument, "%s: config->momentum %g, dampening %g: expected finite values, momentum >= 0",
                 function, c->momentum, c->dampening);
    // As torch.optim.SGD: Nesterov needs momentum and no dampening.
    if (c->nesterov && (c->momentum <= 0.0 || c->dampening != 0.0))
      throwError(collInvalidArgument,
                 "%s: config->nesterov with momentum %g and dampening %g: expected momentum > 0 "
                 "and dampening 0",
                 function, c->momentum, c->dampening);
  }
  if (c->optimizer != collZeroSgd) {
    if (!(c->beta1 >= 0.0 && c->beta1 < 1.0) || !(c->beta2 >= 0.0 && c->beta2 < 1.0))
      throwError(collInvalidArgument, "%s: config->beta1 %g, beta2 %g: expected each in [0, 1)", function, c->beta1,
                 c->beta2);
    if (!(c->eps > 0.0)) throwError(collInvalidArgument, "%s: config->eps %g: expected > 0", function, c->eps);
  }
}

}  // namespace
}  // namespace zero
}  // namespace coll

using namespace coll::zero;

COLL_API collResult_t collZeroOptimizerStep(const collZeroStepConfig_t* config, float* master, const void* grad,
                                            collDataType_t gradType, float* state0, float* state1, void* paramOut,
                                            collDataType_t paramType, size_t count) {
  const char* function = "collZeroOptimizerStep";
  return coll::guardedCall(function, [&] {
    checkStepConfig(function, config);
    checkFloatType(function, gradType, "gradType");
    checkBuffer(function, master, count, "master");
    checkBuffer(function, grad, count, "grad");
    const bool adam = config->optimizer != collZeroSgd;
    if (adam || config->momentum != 0.0) checkBuffer(function, state0, count, "state0");
    if (adam) checkBuffer(function, state1, count, "state1");
    if (paramOut != nullptr && paramType != collFloat16 && paramType != collBfloat16)
      coll::throwError(collInvalidArgument, "%s: paramType %d: expected collFloat16 or collBfloat16 with paramOut",
                       function, static_cast<int>(paramType));
    const float scale = float(config->gradScale);
    float g[kBlock];
    const AdamBlock adamBlock(*config);
    const SgdBlock sgdBlock(*config);
    for (size_t first = 0; first < count; first += kBlock) {
      const size_t n = count - first < kBlock ? count - first : kBlock;
      loadGradients(grad, gradType, first, n, scale, g);
      if (adam) {
        adamBlock.run(master + first, g, state0 + first, state1 + first, n);
      } else {
        sgdBlock.run(master + first, g, state0 == nullptr ? nullptr : state0 + first, n);
      }
      if (paramOut != nullptr)
        storeLowPrecision(master + first, n, paramType, static_cast<uint16_t*>(paramOut) + first);
    }
  });
}

COLL_API collResult_t collZeroSquaredNorm(const void* data, collDataType_t datatype, size_t count, double* sumOfSquares,
                                          int* nonFinite) {
  const char* function = "collZeroSquaredNorm";
  return coll::guardedCall(function, [&] {
    checkFloatType(function, datatype, "datatype");
    checkBuffer(function, data, count, "data");
    if (sumOfSquares == nullptr || nonFinite == nullptr)
      coll::throwError(collInvalidArgument, "%s: sumOfSquares or nonFinite is NULL: expected places for the results",
                       function);
    // Squared and summed in double: a float square overflows from |x| > 1.8e19 (finite float32 and
    // bfloat16 values) and would flag finite data as non-finite. Without -ffast-math a float sum
    // would not vectorize either (a serial chain), so double costs nothing.
    double total = 0.0;
    float g[kBlock];
    for (size_t first = 0; first < count; first += kBlock) {
      const size_t n = count - first < kBlock ? count - first : kBlock;
      loadGradients(data, datatype, first, n, 1.0f, g);
      for (size_t i = 0; i < n; ++i) total += double(g[i]) * double(g[i]);
    }
    *sumOfSquares = total;
    *nonFinite = std::isfinite(total) ? 0 : 1;
  });
}
