// The ZeRO layer's work on device memory besides the step's kernel: the checks every call with a
// stream makes before it touches anything, the accumulation of a reduced gradient into its shard,
// and the copy of a rank's own piece, each enqueued on the caller's stream. Plain C++, no CUDA
// header: device_memory.cu implements it where the build has CUDA, device_memory_none.cc (which
// refuses every stream) where it has not.
#pragma once

#include <cstddef>
#include <initializer_list>

#include "collective.h"

namespace coll {
namespace zero {

struct NamedBuffer {
  const void* pointer;  // NULL (an empty buffer) is not checked
  const char* name;
};

// Throws CollError naming `function` unless this process can run on the stream's GPU
// (collInvalidUsage: no CUDA support, no GPU, or an unknown stream) and every buffer lies in
// device or managed memory of that GPU (collInvalidArgument, naming the buffer). Returns the GPU.
int checkStreamBuffers(const char* function, void* stream, std::initializer_list<NamedBuffer> buffers);

// dst[i] = dst[i] + src[i] for i < count in `datatype` (float32, float16 or bfloat16: added in
// float and rounded to nearest even once, as the host's reduceCopy does), on `stream`.
void addOnStream(const char* function, void* dst, const void* src, size_t count, collDataType_t datatype, void* stream);

// `bytes` from src to dst on `stream`; nothing where they are the same place.
void copyOnStream(const char* function, void* dst, const void* src, size_t bytes, void* stream);

}  // namespace zero
}  // namespace coll
