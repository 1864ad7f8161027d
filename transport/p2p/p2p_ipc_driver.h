// The CUDA IPC driver of transport/ipc_buffer_cache.h (built with CUDA).
#pragma once

#include <memory>

#include "transport/ipc_buffer_cache.h"

namespace coll {
namespace transport {

// Throws collUnhandledCudaError where the driver lacks the pointer attributes the keys need.
std::unique_ptr<IpcDriver> makeCudaIpcDriver();

}  // namespace transport
}  // namespace coll
