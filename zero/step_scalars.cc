// A step's scalars (step_scalars.h), once per call: the bias corrections in double, then rounded
// to float, as torch.optim computes them.
#include <cmath>

#include "zero/step_scalars.h"

namespace coll {
namespace zero {

StepScalars stepScalarsOf(const collZeroStepConfig_t& c) {
  StepScalars s{};
  s.gradScale = float(c.gradScale);
  s.adam = c.optimizer != collZeroSgd;
  s.decoupled = c.optimizer == collZeroAdamW;
  s.weightDecay = float(c.weightDecay);
  if (s.adam) {
    s.beta1 = float(c.beta1);
    s.oneMinusBeta1 = float(1.0 - c.beta1);
    s.beta2 = float(c.beta2);
    s.oneMinusBeta2 = float(1.0 - c.beta2);
    s.eps = float(c.eps);
    s.decayFactor = float(1.0 - c.lr * c.weightDecay);
    s.stepSize = float(c.lr / (1.0 - std::pow(c.beta1, double(c.step))));
    s.bias2Sqrt = float(std::sqrt(1.0 - std::pow(c.beta2, double(c.step))));
  } else {
    s.lr = float(c.lr);
    s.momentum = float(c.momentum);
    s.oneMinusDampening = float(1.0 - c.dampening);
    s.nesterov = c.nesterov != 0;
    s.firstStep = c.step == 1;
  }
  return s;
}

}  // namespace zero
}  // namespace coll
