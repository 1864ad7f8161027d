#include "src/exec/stream_waits.h"

#include <cuda.h>

#include <algorithm>

#include "common/cuda_device.h"
#include "common/error.h"

namespace coll {
namespace {

using BatchMemOpFn = CUresult (*)(CUstream, unsigned int, CUstreamBatchMemOpParams*, unsigned int);
// Operations per driver call; the driver limits one batch.
constexpr size_t kWaitsPerBatch = 128;

}  // namespace

StreamWaits::StreamWaits() {
  // 12000: the _v2 entry point, the one CUDA 12 and later document.
  batchMemOp_ = cudaDriverFunction("cuStreamBatchMemOp", 12000);
  if (batchMemOp_ == nullptr)
    throwError(collUnhandledCudaError,
               "the CUDA driver has no cuStreamBatchMemOp (stream memory operations; driver for CUDA 12 or later "
               "needed): ranks of different processes on one GPU cannot be ordered without it");
}

namespace {

// Issues `words` as stream memory operations of one kind, in order, in batches the driver accepts.
void issue(void* batchMemOp, cudaStream_t stream, const std::vector<AwaitedWord>& words, bool write) {
  const BatchMemOpFn batch = reinterpret_cast<BatchMemOpFn>(batchMemOp);
  std::vector<CUstreamBatchMemOpParams> ops;
  for (size_t first = 0; first < words.size(); first += kWaitsPerBatch) {
    const size_t n = std::min(kWaitsPerBatch, words.size() - first);
    ops.assign(n, CUstreamBatchMemOpParams{});
    for (size_t i = 0; i < n; ++i) {
      const AwaitedWord& w = words[first + i];
      if (write) {
        ops[i].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        ops[i].writeValue.address = reinterpret_cast<CUdeviceptr>(w.address);
        ops[i].writeValue.value = w.value;
      } else {
        ops[i].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
        ops[i].waitValue.address = reinterpret_cast<CUdeviceptr>(w.address);
        ops[i].waitValue.value = w.value;
        ops[i].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
      }
    }
    const CUresult rc = batch(reinterpret_cast<CUstream>(stream), static_cast<unsigned>(n), ops.data(), 0);
    if (rc != CUDA_SUCCESS)
      throwError(collUnhandledCudaError, "cuStreamBatchMemOp (%zu %s) failed with CUresult %d", n,
                 write ? "writes" : "waits", static_cast<int>(rc));
  }
}

}  // namespace

void StreamWaits::enqueue(cudaStream_t stream, const std::vector<AwaitedWord>& words) {
  issue(batchMemOp_, stream, words, /*write=*/false);
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.insert(pending_.end(), words.begin(), words.end());
}

void StreamWaits::forgetPending() {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.clear();
}

void StreamWaits::releasePending(cudaStream_t side) {
  std::vector<AwaitedWord> words;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    words = pending_;
  }
  if (!words.empty()) issue(batchMemOp_, side, words, /*write=*/true);
}
}  // namespace coll
