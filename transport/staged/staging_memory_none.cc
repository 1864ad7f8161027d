// The staged transport's device memory in a build without CUDA: none to make (staging_memory.h).
// The host stand-in (staging_memory_host.cc) is built everywhere, for the tests.
#include "common/error.h"
#include "transport/staged/staging_memory.h"

namespace coll {
namespace transport {

std::unique_ptr<StagingMemory> makeDeviceStagingMemory(int) {
  throwError(collInvalidUsage, "staged: this build of libcollective has no CUDA support (COLL_WITH_CUDA=OFF)");
}

}  // namespace transport
}  // namespace coll
