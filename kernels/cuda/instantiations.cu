// The kernel tables: one scheduleKernel and one directAllReduceKernel per (datatype, op) of
// type_op_table.h, and nothing else instantiates kernels, so the compile time is bounded by the
// table (avg shares the sum kernels).
#include <cuda_runtime.h>

#include "kernels/cuda/direct_kernel.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/schedule_kernel.cuh"
#include "kernels/cuda/type_op_table.h"

namespace coll {
namespace device {
namespace {

using KernelFn = void (*)(LaunchParams);
using DirectKernelFn = void (*)(DirectParams);

// One table per kernel template: COLL_TABLE_KERNEL names the template while its table expands.
#define COLL_TABLE_ENTRY(T, op, Op) &COLL_TABLE_KERNEL<T, Op>,
#define COLL_TABLE_ROW(dtype, T) {COLL_DEVICE_OPS(COLL_TABLE_ENTRY, T)},
#define COLL_TABLE_KERNEL scheduleKernel
const KernelFn kKernels[collNumTypes][collNumOps] = {COLL_DEVICE_TYPES(COLL_TABLE_ROW)};
#undef COLL_TABLE_KERNEL
#define COLL_TABLE_KERNEL directAllReduceKernel
const DirectKernelFn kDirectKernels[collNumTypes][collNumOps] = {COLL_DEVICE_TYPES(COLL_TABLE_ROW)};
#undef COLL_TABLE_KERNEL
#undef COLL_TABLE_ROW
#undef COLL_TABLE_ENTRY

// The fewest blocks of `kernel` one SM holds at once, folded into *least; false when CUDA cannot say.
bool foldBlocksPerSm(const void* kernel, int* least) {
  int blocks = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kKernelThreads, 0) != cudaSuccess) return false;
  if (*least < 0 || blocks < *least) *least = blocks;
  return true;
}

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
    for (int o = 0; o < collNumOps; ++o)
      if (!foldBlocksPerSm(reinterpret_cast<const void*>(kKernels[t][o]), &least) ||
          !foldBlocksPerSm(reinterpret_cast<const void*>(kDirectKernels[t][o]), &least))
        return 0;
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

int launchDirectAllReduceKernel(collDataType_t type, collRedOp_t op, const DirectParams& params, void* stream) {
  if (!validPair(type, op) || params.nranks < 1 || params.nranks > static_cast<uint32_t>(kMaxDevicePeers))
    return static_cast<int>(cudaErrorInvalidValue);
  void* args[] = {const_cast<DirectParams*>(&params)};
  const cudaError_t rc = cudaLaunchKernel(reinterpret_cast<const void*>(kDirectKernels[type][op]), dim3(kDirectBlocks),
                                          dim3(kKernelThreads), args, 0, static_cast<cudaStream_t>(stream));
  return static_cast<int>(rc);
}

}  // namespace device
}  // namespace coll
