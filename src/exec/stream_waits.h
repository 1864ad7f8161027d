// Stream-ordered waits on 32-bit words in device memory: the stream (the GPU's front end, not a
// kernel) holds back the work behind it until every word has its value. Serialized mode uses them
// so that no kernel ever waits for another process's kernel. They come from the driver's
// cuStreamBatchMemOp, looked up at run time, so libcollective needs no link dependency on libcuda;
// stream capture records them as graph nodes.
//
// A wait has no timeout: a peer that died leaves it waiting for good. So the waits enqueued since
// the engine last saw its launches end are remembered, and abort releases them by writing the
// awaited values from a side stream (the kernels behind them see the abort flag and do nothing).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
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
  void enqueue(cudaStream_t stream, const std::vector<AwaitedWord>& words);
  // Every launch enqueued so far has ended: no remembered wait can still hold a stream.
  void forgetPending();
  // Writes every remembered awaited value, in the order the waits were enqueued, on `side` (a
  // stream that does not wait for the held ones). One pass can miss a wait that a later write
  // to the same word overtook before the stream saw it, so the caller repeats it until the held
  // streams drained. From any thread.
  void releasePending(cudaStream_t side);

 private:
  void* batchMemOp_ = nullptr;  // CUresult (*)(CUstream, unsigned, CUstreamBatchMemOpParams*, unsigned)
  std::mutex mutex_;            // abort releases from another thread
  std::vector<AwaitedWord> pending_;
};
}  // namespace coll
