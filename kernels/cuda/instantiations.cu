// The kernel table: one scheduleKernel per (datatype, op) of type_op_table.h, and nothing else
// instantiates kernels, so the compile time is bounded by the table (avg shares the sum kernel).
#include <cuda_runtime.h>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/schedule_kernel.cuh"
#include "kernels/cuda/type_op_table.h"

namespace coll {
namespace device {
namespace {

using KernelFn = void (*)(LaunchParams);

#define COLL_KERNEL_ENTRY(T, op, Op) &scheduleKernel<T, Op>,
#define COLL_KERNEL_ROW(dtype, T) {COLL_DEVICE_OPS(COLL_KERNEL_ENTRY, T)},
const KernelFn kKernels[collNumTypes][collNumOps] = {COLL_DEVICE_TYPES(COLL_KERNEL_ROW)};
#undef COLL_KERNEL_ROW
#undef COLL_KERNEL_ENTRY

bool validPair(collDataType_t type, collRedOp_t op) {
  return static_cast<int>(type) >= 0 && type < collNumTypes && static_cast<int>(op) >= 0 && op < collNumOps;
}

}  // namespace

bool hasScheduleKernel(collDataType_t type, collRedOp_t op) {
  return validPair(type, op) && kKernels[type][op] != nullptr;
}

int scheduleKernelBlocksPerSm() {
  int least = -1;
  for (int t = 0; t < collNumTypes; ++t)
    for (int o = 0; o < collNumOps; ++o) {
      int blocks = 0;
      if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kKernels[t][o], kKernelThreads, 0) != cudaSuccess)
        return 0;
      if (least < 0 || blocks < least) least = blocks;
    }
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
