// Stream-ordered waits on 32-bit words in device memory: the stream (the GPU's front end, not a
// kernel) holds back the work behind it until every word has its value. Serialized mode uses them
// so that no kernel ever waits for another process's kernel. They come from the driver's
// cuStreamBatchMemOp, looked up at run time, so libcollective needs no link dependency on libcuda;
// stream capture records them as graph nodes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace coll {
struct AwaitedWord {
  const uint32_t* address;  // device memory (this rank's or a peer's mapped allocation)
  uint32_t value;           // waits until *address == value
};

class StreamWaits {
 public:
  // Throws collUnhandledCudaError when the driver does not offer stream memory operations.
  StreamWaits();
  void enqueue(cudaStream_t stream, const std::vector<AwaitedWord>& words) const;

 private:
  void* batchMemOp_ = nullptr;  // CUresult (*)(CUstream, unsigned, CUstreamBatchMemOpParams*, unsigned)
};
}  // namespace coll
