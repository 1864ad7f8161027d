// Builds without CUDA: a stream is refused (device_memory_none.cc), as the rest of the API
// refuses one.
#include "zero/device/device_memory.h"
#include "zero/device/device_step.h"

namespace coll {
namespace zero {

void stepOnStream(const char* function, const StepScalars&, float*, const void*, collDataType_t, float*, float*, void*,
                  collDataType_t, size_t, void* stream) {
  checkStreamBuffers(function, stream, {});
}

void squaredNormOnStream(const char* function, const void*, collDataType_t, size_t, double*, int*, void* stream) {
  checkStreamBuffers(function, stream, {});
}

}  // namespace zero
}  // namespace coll
