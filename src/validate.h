// Argument checks for the collective entry points. Each throws CollError(collInvalidArgument)
// with a message naming the C function, the bad value and what was expected, before any buffer
// or peer is touched.
#pragma once

#include "src/coll_call.h"

namespace coll {

// No buffer reaches 2^kMaxBufferBits bytes: it would not fit in any 64-bit Linux address space.
// Validation refuses a call whose buffers would run past the end of the address space, so every
// count and byte size a call carries stays below this (src/call_tag.h relies on it).
constexpr int kMaxBufferBits = 56;

// Checks what the call's row in the collective table (src/collective_table.h) asks: datatype, op,
// root or peer, count overflow and fit in the address space, buffer presence and overlap for a
// communicator of `nranks` where this rank is `rank`. Fills call.elemSize.
void validateCall(const char* function, CollCall& call, int rank, int nranks);

// A call with a NULL stream takes host buffers: a buffer that is device memory the host cannot
// read is refused (collInvalidArgument naming it), not read as host memory. Asked only where the
// calling thread has a CUDA context (common/cuda_device.h): host-only programs pay nothing.
void refuseDeviceBuffers(const char* function, const CollCall& call);

}  // namespace coll
