// The sharded optimizer step and the squared norm on device memory (collZeroOptimizerStepOnStream,
// collZeroSquaredNormOnStream): each checks that every buffer it is given lies in memory of the
// stream's GPU, then enqueues its kernels on the stream and returns. Plain C++, no CUDA header: device_step.cu
// implements it where the build has CUDA, device_step_none.cc (which refuses every stream) where it has not.
#pragma once

#include <cstddef>

#include "collective.h"
#include "zero/step_scalars.h"

namespace coll {
namespace zero {

// The arguments as collZeroOptimizerStep checked them, and a non-NULL stream (a cudaStream_t).
// Throws CollError naming `function`: collInvalidUsage where this process has no GPU to run on,
// collInvalidArgument for a buffer that is not device memory of the stream's GPU.
void stepOnStream(const char* function, const StepScalars& scalars, float* master, const void* grad,
                  collDataType_t gradType, float* state0, float* state1, void* paramOut, collDataType_t paramType,
                  size_t count, void* stream);

// collZeroSquaredNormOnStream's work with a stream, on arguments it has checked: the sum of
// squares (in double, in an order fixed by the element count alone, so a run repeats its bits)
// into *sumOfSquares and whether it is finite into *nonFinite, both device memory, on the stream.
void squaredNormOnStream(const char* function, const void* data, collDataType_t datatype, size_t count,
                         double* sumOfSquares, int* nonFinite, void* stream);

}  // namespace zero
}  // namespace coll
