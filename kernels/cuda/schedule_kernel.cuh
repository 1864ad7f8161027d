// The kernel that executes one rank's lowered schedule (or one unit of it, in serialized mode):
// each block is one lane and walks the units in the order of unit_order.h, waiting for its slots,
// running one reduceCopy per unit and posting. A rank whose earlier launch failed does nothing, so
// a broken communicator stops instead of hanging its stream; the host reads the error from the
// host-mapped status (collCommGetAsyncError).
#pragma once

#include <cstdint>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/ll_protocol.cuh"
#include "kernels/cuda/simple_protocol.cuh"
#include "kernels/cuda/unit_order.h"

namespace coll {
namespace device {

constexpr int kKernelThreads = 512;
static_assert(kSimpleGeometry.threads == kKernelThreads && kLLGeometry.threads == kKernelThreads,
              "one block size for both protocols (the kernel's launch bounds)");

template <typename T, typename Op>
__global__ void __launch_bounds__(kKernelThreads) scheduleKernel(const __grid_constant__ LaunchParams params) {
  __shared__ int failed;
  if (threadIdx.x == 0) failed = loadVolatile(&params.status->error) != kDeviceOk ? 1 : 0;
  __syncthreads();
  if (failed) return;

  const ChannelGeometry geometry = geometryOf(params.protocol);
  const uint64_t sliceElemCount = sliceElems(geometry, sizeof(T));
  forEachUnit(
      params.steps, params.nsteps, sliceElemCount, params.firstRound, params.roundLimit,
      // `failed` is read only where every thread of the block agrees on it (after a
      // __syncthreads inside the barrier and the units): a thread that skipped a unit on its own
      // would leave the others waiting at that unit's __syncthreads.
      [&](uint32_t first) {
        if (!(params.steps[first].flags & kStepBarrierBefore) || gridDim.x == 1) return;
        WaitBound bound{params.timeoutNs, params.status, first};
        laneBarrier(params.laneBarrier, bound, &failed);
      },
      [&](uint32_t index, uint64_t slice) {
        const DeviceStep& step = params.steps[index];
        Unit unit{&params,
                  &step,
                  slice,
                  laneRange(step, slice, sliceElemCount, geometry.lanes, blockIdx.x, sizeof(T)),
                  WaitBound{params.timeoutNs, params.status, index},
                  &failed};
        if (params.protocol == Protocol::kLL) {
          runLLUnit<T, Op>(unit);
        } else {
          runSimpleUnit<T, Op>(unit);
        }
      });
}

}  // namespace device
}  // namespace coll
