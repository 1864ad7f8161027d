// One element of a sharded optimizer step, written once for the host and the GPU: the device
// kernel (zero/device/device_step.cu) runs these functions, and tests/zero/test_step_element.cc
// runs them on the host against collZeroOptimizerStep's loops, bit for bit, so the kernel's
// arithmetic is checked where there is no GPU. The order of operations is the host loops'
// (optimizer_loops.h: torch.optim's single-tensor form), each rounded on its own: the device build
// compiles them without FMA contraction (-fmad=false), and sqrt and division are IEEE-rounded on
// both sides, so a shard stepped on the GPU matches one stepped on the host.
#pragma once

#include <cmath>
#include <cstddef>

#include "zero/step_scalars.h"

#if defined(__CUDACC__)
#define COLL_ZERO_HOST_DEVICE __host__ __device__
#else
#define COLL_ZERO_HOST_DEVICE
#endif

namespace coll {
namespace zero {

// torch.optim.Adam / AdamW on one element; g is the widened, scaled gradient.
COLL_ZERO_HOST_DEVICE inline void adamElement(const StepScalars& s, float& p, float g, float& m, float& v) {
  if (s.decoupled) {
    p *= s.decayFactor;
  } else if (s.weightDecay != 0.0f) {
    g += p * s.weightDecay;
  }
  m = m * s.beta1 + g * s.oneMinusBeta1;
  v = v * s.beta2 + g * g * s.oneMinusBeta2;
  const float denom = sqrtf(v) / s.bias2Sqrt + s.eps;
  p += -s.stepSize * (m / denom);
}

// torch.optim.SGD on one element; `buffer` is the momentum buffer (unused without momentum), which
// starts as the first step's gradient, as torch's does.
COLL_ZERO_HOST_DEVICE inline void sgdElement(const StepScalars& s, float& p, float g, float* buffer) {
  if (s.weightDecay != 0.0f) g += p * s.weightDecay;
  if (s.momentum != 0.0f) {
    *buffer = s.firstStep ? g : *buffer * s.momentum + g * s.oneMinusDampening;
    if (s.nesterov) {
      g += *buffer * s.momentum;
    } else {
      g = *buffer;
    }
  }
  p += g * -s.lr;
}

// Element i of the step: state0 and state1 are the optimizer's state arrays (Adam: both; SGD:
// state0 when it has momentum).
COLL_ZERO_HOST_DEVICE inline void stepElement(const StepScalars& s, float* master, float g, float* state0,
                                              float* state1, size_t i) {
  float p = master[i];
  if (s.adam) {
    adamElement(s, p, g, state0[i], state1[i]);
  } else {
    sgdElement(s, p, g, state0 == nullptr ? nullptr : state0 + i);
  }
  master[i] = p;
}

}  // namespace zero
}  // namespace coll
