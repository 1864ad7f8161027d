// Builds without CUDA: every stream is refused, as the rest of the API refuses one; the other
// functions are never reached.
#include "common/error.h"
#include "zero/device/device_memory.h"

namespace coll {
namespace zero {

int checkStreamBuffers(const char* function, void* stream, std::initializer_list<NamedBuffer>) {
  throwError(collInvalidUsage,
             "%s: stream %p given, but this build of libcollective has no CUDA support (COLL_WITH_CUDA=OFF): "
             "expected a NULL stream and host buffers",
             function, stream);
}

void addOnStream(const char* function, void*, const void*, size_t, collDataType_t, void* stream) {
  checkStreamBuffers(function, stream, {});
}

void copyOnStream(const char* function, void*, const void*, size_t, void* stream) {
  checkStreamBuffers(function, stream, {});
}

}  // namespace zero
}  // namespace coll
