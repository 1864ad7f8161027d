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

void StreamWaits::enqueue(cudaStream_t stream, const std::vector<AwaitedWord>& words) const {
  const BatchMemOpFn batch = reinterpret_cast<BatchMemOpFn>(batchMemOp_);
  std::vector<CUstreamBatchMemOpParams> ops;
  for (size_t first = 0; first < words.size(); first += kWaitsPerBatch) {
    const size_t n = std::min(kWaitsPerBatch, words.size() - first);
    ops.assign(n, CUstreamBatchMemOpParams{});
    for (size_t i = 0; i < n; ++i) {
      ops[i].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
      ops[i].waitValue.address = reinterpret_cast<CUdeviceptr>(words[first + i].address);
      ops[i].waitValue.value = words[first + i].value;
      ops[i].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
    }
    const CUresult rc = batch(reinterpret_cast<CUstream>(stream), static_cast<unsigned>(n), ops.data(), 0);
    if (rc != CUDA_SUCCESS)
      throwError(collUnhandledCudaError, "cuStreamBatchMemOp (%zu waits) failed with CUresult %d", n,
                 static_cast<int>(rc));
  }
}
}  // namespace coll
