// COLL_CUDACHECK: the CUDA member of the check macro family (common/error.h). A failed runtime call
// throws collUnhandledCudaError naming the call, CUDA's message and where it happened.
#pragma once

#include <cuda_runtime.h>

#include "common/error.h"

#define COLL_CUDACHECK(expr)                                                                                       \
  do {                                                                                                             \
    cudaError_t collCudaResult_ = (expr);                                                                          \
    if (collCudaResult_ != cudaSuccess)                                                                            \
      ::coll::throwError(collUnhandledCudaError, "%s failed: %s (%s) at %s:%d", #expr,                             \
                         cudaGetErrorString(collCudaResult_), cudaGetErrorName(collCudaResult_), COLL_SOURCE_FILE, \
                         __LINE__);                                                                                \
  } while (0)
