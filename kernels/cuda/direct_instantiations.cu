// The direct all-reduce's kernel table: one directAllReduceKernel per (datatype, op) of
// type_op_table.h (avg shares the sum kernel), in its own translation unit so that it compiles
// beside the schedule kernels' (instantiations.cu).
#include "kernels/cuda/direct_kernel.cuh"
#include "kernels/cuda/kernel_table.cuh"
#include "kernels/cuda/launch.h"

namespace coll {
namespace device {
namespace {

using DirectKernelFn = void (*)(DirectParams);

#define COLL_TABLE_KERNEL directAllReduceKernel
const DirectKernelFn kDirectKernels[collNumTypes][collNumOps] = {COLL_DEVICE_TYPES(COLL_TABLE_ROW)};
#undef COLL_TABLE_KERNEL

}  // namespace

bool foldDirectKernelBlocksPerSm(int* least) { return foldTableBlocksPerSm(kDirectKernels, kKernelThreads, least); }

int launchDirectAllReduceKernel(collDataType_t type, collRedOp_t op, const DirectParams& params, void* stream) {
  if (!validTypeOpPair(type, op) || params.nranks < 1 || params.nranks > static_cast<uint32_t>(kMaxDevicePeers))
    return static_cast<int>(cudaErrorInvalidValue);
  void* args[] = {const_cast<DirectParams*>(&params)};
  const cudaError_t rc = cudaLaunchKernel(reinterpret_cast<const void*>(kDirectKernels[type][op]), dim3(kDirectBlocks),
                                          dim3(kKernelThreads), args, 0, static_cast<cudaStream_t>(stream));
  return static_cast<int>(rc);
}

}  // namespace device
}  // namespace coll
