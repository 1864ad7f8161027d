// The schedule kernels' table: one scheduleKernel per (datatype, op) of type_op_table.h, and
// nothing else instantiates them, so the compile time is bounded by the table (avg shares the sum
// kernel). The direct all-reduce's table is direct_instantiations.cu.
#include <cuda_runtime.h>

#include "kernels/cuda/kernel_table.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/schedule_kernel.cuh"

namespace coll {
namespace device {

// direct_instantiations.cu: its table's fewest blocks per SM, folded into *least.
bool foldDirectKernelBlocksPerSm(int* least);

namespace {

using KernelFn = void (*)(LaunchParams);

#define COLL_TABLE_KERNEL scheduleKernel
const KernelFn kKernels[collNumTypes][collNumOps] = {COLL_DEVICE_TYPES(COLL_TABLE_ROW)};
#undef COLL_TABLE_KERNEL

}  // namespace

bool hasScheduleKernel(collDataType_t type, collRedOp_t op) {
  return validTypeOpPair(type, op) && kKernels[type][op] != nullptr;
}

int scheduleKernelBlocksPerSm() {
  int least = -1;
  if (!foldTableBlocksPerSm(kKernels, kKernelThreads, &least) || !foldDirectKernelBlocksPerSm(&least)) return 0;
  return least < 0 ? 0 : least;
}

int launchScheduleKernel(collDataType_t type, collRedOp_t op, const LaunchParams& params, void* stream) {
  if (!hasScheduleKernel(type, op)) return static_cast<int>(cudaErrorInvalidValue);
  const ChannelGeometry geometry = geometryOf(params.protocol);
  void* args[] = {const_cast<LaunchParams*>(&params)};
  cudaError_t rc = cudaLaunchKernel(reinterpret_cast<const void*>(kKernels[type][op]), dim3(geometry.lanes),
                                    dim3(geometry.threads), args, 0, static_cast<cudaStream_t>(stream));
  return static_cast<int>(rc);
}

}  // namespace device
}  // namespace coll
