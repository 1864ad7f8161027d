// Whether this process can use a CUDA device, asked by the communicator before it accepts a stream,
// and by tests and tools. Built with and without CUDA (cuda_device_none.cc), so callers need no
// #ifdef: without CUDA support compiled in, there is never a device.
#pragma once

#include <string>

namespace coll {

// True when CUDA support is compiled in and the driver reports at least one device. Otherwise
// false, and *why (when given) says what is missing, e.g. "this build of libcollective has no
// CUDA support (COLL_WITH_CUDA=OFF)" or "cudaGetDeviceCount: no CUDA-capable device is detected".
// Asked once per process; later calls return the cached answer.
bool cudaDeviceAvailable(std::string* why = nullptr);

// Whether CUDA support is compiled into this library.
bool cudaCompiledIn();

}  // namespace coll
