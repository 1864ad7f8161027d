// The cases the optimizer-step tests share: the configurations (torch.optim's defaults for Adam
// and AdamW, SGD with and without momentum, dampening, Nesterov and weight decay), the gradient
// and parameter-copy precisions, and the inputs of every step.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "zero_test_util.h"

namespace zerotest {

inline collZeroStepConfig_t adam(collZeroOptimizer_t optimizer, double weightDecay) {
  collZeroStepConfig_t c{};
  c.optimizer = optimizer;
  c.lr = 1e-3;
  c.beta1 = 0.9;
  c.beta2 = 0.999;
  c.eps = 1e-8;
  c.weightDecay = weightDecay;
  c.gradScale = 1.0;
  return c;
}

inline collZeroStepConfig_t sgd(double momentum, double dampening, int nesterov, double weightDecay) {
  collZeroStepConfig_t c{};
  c.optimizer = collZeroSgd;
  c.lr = 0.1;
  c.momentum = momentum;
  c.dampening = dampening;
  c.nesterov = nesterov;
  c.weightDecay = weightDecay;
  c.gradScale = 1.0;
  return c;
}

inline double initialParam(size_t i) { return (i % 2 ? 1.0 : -1.0) * (0.5 + double((i * 13) % 97) / 97.0); }
inline double gradient(long long step, size_t i) {
  return 0.02 * double(int((i * 37 + size_t(step) * 101) % 199) - 99) / 99.0 + 0.001 * double(step);
}

// A gradient type and how the caller scales it (loss scaling for half), and the paramOut type.
struct Precision {
  collDataType_t gradType;
  double lossScale;          // gradients are stored multiplied by this; gradScale undoes it
  collDataType_t paramType;  // collFloat32: no paramOut
};

inline const Precision kPrecisions[] = {{collFloat32, 1.0, collFloat32},
                                        {collFloat32, 0.75, collBfloat16},
                                        {collFloat16, 1024.0, collFloat16},
                                        {collBfloat16, 1.0, collBfloat16},
                                        {collBfloat16, 8.0, collFloat16}};

struct NamedConfig {
  const char* name;
  collZeroStepConfig_t config;
};

// AdamW whose bias correction sqrt(1 - beta2^step) rounds to 1 in float from step 2 on, where the
// host loops leave its division out (optimizer_loops.h): the same bits as dividing, which the
// tests that compare with the element functions (which always divide) check.
inline collZeroStepConfig_t adamWithBias2RoundingToOne() {
  collZeroStepConfig_t c = adam(collZeroAdamW, 0.05);
  c.beta2 = 0.01;
  return c;
}

inline std::vector<NamedConfig> configs() {
  return {{"Adam", adam(collZeroAdam, 0.0)},
          {"Adam weight decay", adam(collZeroAdam, 0.05)},
          {"AdamW", adam(collZeroAdamW, 0.05)},
          {"AdamW beta2 0.01", adamWithBias2RoundingToOne()},
          {"SGD", sgd(0.0, 0.0, 0, 0.0)},
          {"SGD weight decay", sgd(0.0, 0.0, 0, 0.01)},
          {"SGD momentum", sgd(0.9, 0.0, 0, 0.0)},
          {"SGD momentum dampening weight decay", sgd(0.9, 0.1, 0, 0.01)},
          {"SGD nesterov weight decay", sgd(0.9, 0.0, 1, 0.001)}};
}

// What a run of steps leaves behind: every buffer the step writes.
struct StepOutputs {
  std::vector<float> master, state0, state1;
  std::vector<uint16_t> paramOut;
};

// The start every run of the tests shares: the parameters of initialParam, zero state.
inline StepOutputs stepStart(size_t count) {
  StepOutputs out{std::vector<float>(count), std::vector<float>(count, 0.0f), std::vector<float>(count, 0.0f),
                  std::vector<uint16_t>(count, 0)};
  for (size_t i = 0; i < count; ++i) out.master[i] = float(initialParam(i));
  return out;
}

// A step over `count` elements with collZeroOptimizerStep's arguments: the library's host step, one
// instruction-set variant's loops (OptimizerLoops::step), or the device kernel's element functions.
using StepFunction = void (*)(const collZeroStepConfig_t& config, float* master, const void* grad,
                              collDataType_t gradType, float* state0, float* state1, void* paramOut,
                              collDataType_t paramType, size_t count);

// `steps` steps of `config` on `count` elements through `step`, from the same start every time.
inline StepOutputs runSteps(StepFunction step, collZeroStepConfig_t config, const Precision& precision, size_t count,
                            int steps) {
  StepOutputs out = stepStart(count);
  TypedBuffer grad(precision.gradType, count);
  const bool paramOut = precision.paramType != collFloat32;
  config.gradScale = 1.0 / precision.lossScale;
  for (int s = 1; s <= steps; ++s) {
    config.step = s;
    for (size_t i = 0; i < count; ++i) grad.set(i, gradient(s, i) * precision.lossScale);
    step(config, out.master.data(), grad.data(), precision.gradType, out.state0.data(), out.state1.data(),
         paramOut ? out.paramOut.data() : nullptr, precision.paramType, count);
  }
  return out;
}

// The first element at which two arrays differ, or -1.
template <class T>
long firstDifference(const std::vector<T>& a, const std::vector<T>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return long(i);
  return -1;
}

// "" when every buffer of `got` has `want`'s bits, else where each first differs.
inline std::string outputDifferences(const StepOutputs& got, const StepOutputs& want) {
  std::string problem;
  const struct {
    const char* name;
    long at;
  } buffers[] = {{"master", firstDifference(got.master, want.master)},
                 {"state0", firstDifference(got.state0, want.state0)},
                 {"state1", firstDifference(got.state1, want.state1)},
                 {"paramOut", firstDifference(got.paramOut, want.paramOut)}};
  for (const auto& b : buffers)
    if (b.at >= 0) problem += std::string(" ") + b.name + "[" + std::to_string(b.at) + "] differs";
  return problem;
}

// "AdamW, grad bfloat16, paramOut float16, count 1037": a case's name in failures.
inline std::string caseName(const NamedConfig& nc, const Precision& precision, size_t count) {
  return std::string(nc.name) + ", grad " + typeName(precision.gradType) + ", paramOut " +
         (precision.paramType == collFloat32 ? "none" : typeName(precision.paramType)) + ", count " +
         std::to_string(count);
}

}  // namespace zerotest
