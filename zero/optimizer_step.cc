// The sharded optimizer steps (collZeroOptimizerStep, and collZeroOptimizerStepOnStream for device
// memory) and the gradient norm (collZeroSquaredNorm): the argument checks, then the element loops
// of the instruction-set variant this CPU runs (optimizer_loops.h holds them and says how they
// compute; optimizer_variant.h, which one runs) over the step's threads (step_threads.h), or the
// device kernel (zero/device/device_step.h).
#include <cmath>
#include <cstdint>
#include <iterator>

#include "collective_zero.h"
#include "common/error.h"
#include "kernels/cpu/reduce.h"
#include "src/api_internal.h"
#include "zero/device/device_step.h"
#include "zero/host_step.h"
#include "zero/optimizer_variant.h"
#include "zero/partition.h"
#include "zero/step_scalars.h"
#include "zero/step_threads.h"

namespace coll {
namespace zero {

void stepOnHost(const collZeroStepConfig_t& config, float* master, const void* grad, collDataType_t gradType,
                float* state0, float* state1, void* paramOut, collDataType_t paramType, size_t count, int threads) {
  const OptimizerLoops& loops = activeOptimizerLoops();
  const size_t gradBytes = kernels::dataTypeSize(gradType);
  const size_t paramBytes = kernels::dataTypeSize(paramType);
  // Pieces start on 4 KiB of float32: no two threads write one cache line.
  forEachPiece(count, threads, 1024, [&](size_t begin, size_t end) {
    loops.step(config, master + begin, static_cast<const char*>(grad) + begin * gradBytes, gradType,
               state0 == nullptr ? nullptr : state0 + begin, state1 == nullptr ? nullptr : state1 + begin,
               paramOut == nullptr ? nullptr : static_cast<char*>(paramOut) + begin * paramBytes, paramType,
               end - begin);
  });
}

namespace {

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

// The step reads grad in place while it writes master, the state and paramOut (the host loops
// assume no two of them overlap: optimizer_loops.h), so arrays that overlap are refused rather than
// stepped into a result that depends on the thread count and the instruction set.
void checkSeparateArrays(const char* function, const float* master, const void* grad, collDataType_t gradType,
                         const float* state0, const float* state1, const void* paramOut, collDataType_t paramType,
                         size_t count) {
  struct Span {
    const char* name;
    uintptr_t begin, end;
  };
  auto span = [count](const char* name, const void* p, size_t elementBytes) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
    return Span{name, begin, p == nullptr ? begin : begin + count * elementBytes};
  };
  const Span spans[] = {span("master", master, sizeof(float)), span("grad", grad, kernels::dataTypeSize(gradType)),
                        span("state0", state0, sizeof(float)), span("state1", state1, sizeof(float)),
                        span("paramOut", paramOut, paramOut == nullptr ? 0 : kernels::dataTypeSize(paramType))};
  for (size_t a = 0; a < std::size(spans); ++a)
    for (size_t b = a + 1; b < std::size(spans); ++b)
      if (spans[a].begin < spans[b].end && spans[b].begin < spans[a].end)
        throwError(collInvalidArgument, "%s: %s %p and %s %p overlap (%zu elements each): expected separate arrays",
                   function, spans[a].name, reinterpret_cast<const void*>(spans[a].begin), spans[b].name,
                   reinterpret_cast<const void*>(spans[b].begin), count);
}

// Everything both steps check, before either touches a buffer.
void checkStepArguments(const char* function, const collZeroStepConfig_t* config, const float* master, const void* grad,
                        collDataType_t gradType, const float* state0, const float* state1, const void* paramOut,
                        collDataType_t paramType, size_t count) {
  checkStepConfig(function, config);
  checkFloatType(function, gradType, "gradType");
  checkBuffer(function, master, count, "master");
  checkBuffer(function, grad, count, "grad");
  // The state the step uses: Adam both arrays, SGD state0 with momentum only.
  const bool usesState1 = config->optimizer != collZeroSgd;
  const bool usesState0 = usesState1 || config->momentum != 0.0;
  if (usesState0) checkBuffer(function, state0, count, "state0");
  if (usesState1) checkBuffer(function, state1, count, "state1");
  if (paramOut != nullptr && paramType != collFloat16 && paramType != collBfloat16)
    throwError(collInvalidArgument, "%s: paramType %d: expected collFloat16 or collBfloat16 with paramOut", function,
               static_cast<int>(paramType));
  checkSeparateArrays(function, master, grad, gradType, usesState0 ? state0 : nullptr, usesState1 ? state1 : nullptr,
                      paramOut, paramType, count);
}

// The entry points' bodies, for host memory (stream NULL) and device memory alike: the checks,
// then the host loops or the device's kernels.
void step(const char* function, const collZeroStepConfig_t* config, float* master, const void* grad,
          collDataType_t gradType, float* state0, float* state1, void* paramOut, collDataType_t paramType, size_t count,
          collStream_t stream) {
  checkStepArguments(function, config, master, grad, gradType, state0, state1, paramOut, paramType, count);
  if (stream == nullptr) {
    stepOnHost(*config, master, grad, gradType, state0, state1, paramOut, paramType, count,
               stepThreadsFromEnvironment());
    return;
  }
  stepOnStream(function, stepScalarsOf(*config), master, grad, gradType, state0, state1, paramOut, paramType, count,
               stream);
}

void squaredNorm(const char* function, const void* data, collDataType_t datatype, size_t count, double* sumOfSquares,
                 int* nonFinite, collStream_t stream) {
  checkFloatType(function, datatype, "datatype");
  checkBuffer(function, data, count, "data");
  if (sumOfSquares == nullptr || nonFinite == nullptr)
    throwError(collInvalidArgument, "%s: sumOfSquares or nonFinite is NULL: expected places for the results", function);
  if (stream == nullptr) {
    const double total = activeOptimizerLoops().squaredNorm(data, datatype, count);
    *sumOfSquares = total;
    *nonFinite = std::isfinite(total) ? 0 : 1;
    return;
  }
  squaredNormOnStream(function, data, datatype, count, sumOfSquares, nonFinite, stream);
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
    step(function, config, master, grad, gradType, state0, state1, paramOut, paramType, count, nullptr);
  });
}

COLL_API collResult_t collZeroOptimizerStepOnStream(const collZeroStepConfig_t* config, float* master, const void* grad,
                                                    collDataType_t gradType, float* state0, float* state1,
                                                    void* paramOut, collDataType_t paramType, size_t count,
                                                    collStream_t stream) {
  const char* function = "collZeroOptimizerStepOnStream";
  return coll::guardedCall(function, [&] {
    step(function, config, master, grad, gradType, state0, state1, paramOut, paramType, count, stream);
  });
}

COLL_API collResult_t collZeroSquaredNorm(const void* data, collDataType_t datatype, size_t count, double* sumOfSquares,
                                          int* nonFinite) {
  const char* function = "collZeroSquaredNorm";
  return coll::guardedCall(function,
                           [&] { squaredNorm(function, data, datatype, count, sumOfSquares, nonFinite, nullptr); });
}

COLL_API collResult_t collZeroSquaredNormOnStream(const void* data, collDataType_t datatype, size_t count,
                                                  double* sumOfSquares, int* nonFinite, collStream_t stream) {
  const char* function = "collZeroSquaredNormOnStream";
  return coll::guardedCall(function,
                           [&] { squaredNorm(function, data, datatype, count, sumOfSquares, nonFinite, stream); });
}
