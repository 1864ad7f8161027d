// A sharded optimizer step's scalars, shared by the host loops (optimizer_loops.h) and the device
// kernel (step_element.h): plain data and one out-of-line function, so that the instruction-set
// variants may include it without inlining anything of another variant's build.
#pragma once

#include "collective_zero.h"

namespace coll {
namespace zero {

// A step's scalars, rounded to float where torch rounds them, computed once per call on the host
// (stepScalarsOf) and handed to every element: the host loops' blocks and the device kernel.
struct StepScalars {
  float gradScale;  // gradients are multiplied by this as they are widened to float
  bool adam;        // Adam or AdamW, else SGD
  bool decoupled;   // AdamW: weight decay scales the parameter, not the gradient
  // Adam and AdamW.
  float beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps, decayFactor, stepSize, bias2Sqrt;
  // Both: the L2 weight decay added to the gradient (Adam, SGD).
  float weightDecay;
  // SGD.
  float lr, momentum, oneMinusDampening;
  bool nesterov, firstStep;
};

// From a configuration collZeroOptimizerStep has checked (zero/step_scalars.cc).
StepScalars stepScalarsOf(const collZeroStepConfig_t& config);

}  // namespace zero
}  // namespace coll
