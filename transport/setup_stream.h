// A CUDA stream for a transport's setup writes to device memory (zeroing its regions, uploading
// its peer table), synchronized alone: never the legacy stream or the whole device, where other
// communicators' kernels (or, for thread ranks, the kernel of a peer that finished its setup
// first) may wait for this rank. Built with CUDA only.
#pragma once

#include <cuda_runtime.h>

#include "common/cuda_check.h"

namespace coll {
namespace transport {

class SetupStream {
 public:
  SetupStream() { COLL_CUDACHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~SetupStream() { cudaStreamDestroy(stream_); }
  SetupStream(const SetupStream&) = delete;
  SetupStream& operator=(const SetupStream&) = delete;
  cudaStream_t get() const { return stream_; }
  // Waits for what was queued on it.
  void finish() const { COLL_CUDACHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace transport
}  // namespace coll
