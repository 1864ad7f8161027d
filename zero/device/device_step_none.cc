// Builds without CUDA: a stream is refused, as the rest of the API refuses one.
#include "common/error.h"
#include "zero/device/device_step.h"

namespace coll {
namespace zero {

void stepOnStream(const char* function, const StepScalars&, float*, const void*, collDataType_t, float*, float*, void*,
                  collDataType_t, size_t, void* stream) {
  throwError(collInvalidUsage,
             "%s: stream %p given, but this build of libcollective has no CUDA support (COLL_WITH_CUDA=OFF): "
             "expected a NULL stream and host buffers",
             function, stream);
}

}  // namespace zero
}  // namespace coll
