// Enqueues a lowered device program (src/plan/device_program.h) on a CUDA stream over a device-
// memory domain's channels (transport/device_channels.h) and returns: no host wait. Concurrent mode issues one kernel
// launch per launch of the program. Serialized mode issues, per unit, the stream waits for its slots (every lane's
// ready flags of the slots it reads, free flags of the slots it writes) and then the kernel for that unit, so the
// kernel never waits for a kernel of another process (docs/cuda.md).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "collective.h"
#include "kernels/cuda/device_step.h"
#include "kernels/cuda/launch.h"
#include "src/exec/stream_waits.h"
#include "transport/device_channels.h"

namespace coll {

// A program as the launcher reads it (the planner's DeviceProgram owns the arrays).
struct DeviceProgramView {
  const device::DeviceStep* steps = nullptr;
  size_t nsteps = 0;
  const device::DeviceLaunch* launches = nullptr;
  size_t nlaunches = 0;
  device::Protocol protocol = device::Protocol::kSimple;
  device::ChannelGeometry geometry = device::kSimpleGeometry;  // must be the build's for the protocol
  int avgDivisor = 0;
};

class DeviceLauncher {
 public:
  // timeoutMs bounds every wait of a kernel (COLL_TIMEOUT_MS or the communicator's timeout).
  DeviceLauncher(transport::DeviceChannels& channels, int timeoutMs);

  // sendbuff/recvbuff: the call's device buffers (NULL for calls without them: barrier and
  // point-to-point groups, whose steps carry addresses). Throws collUnhandledCudaError when a
  // launch fails, collInvalidUsage for a program the mode cannot run.
  void enqueue(const DeviceProgramView& program, collDataType_t type, collRedOp_t op, const void* sendbuff,
               void* recvbuff, cudaStream_t stream);
  // The direct all-reduce of `count` elements (kernels/cuda/direct_kernel.cuh): one launch, for
  // ranks that share this process (the channels' sharedAddressSpace), or whose buffers are mapped
  // here (mappedSends/mappedRecvs: every rank's, from the channels' mapCallBuffers), and run
  // kernels together. Throws collInternalError where they do not, collUnhandledCudaError when the
  // launch fails.
  void enqueueDirect(int rank, int nranks, uint64_t count, int avgDivisor, collDataType_t type, collRedOp_t op,
                     const void* sendbuff, void* recvbuff, cudaStream_t stream,
                     const char* const* mappedSends = nullptr, char* const* mappedRecvs = nullptr);
  // Serialized mode's stream waits (stream_waits.h): forget those of launches known to have
  // ended; release those that may still hold a stream (abort). No-ops in concurrent mode.
  void forgetPendingWaits() {
    if (waits_) waits_->forgetPending();
  }
  void releasePendingWaits(cudaStream_t side) {
    if (waits_) waits_->releasePending(side);
  }

 private:
  void launch(const DeviceProgramView& program, const device::DeviceLaunch& launch, collDataType_t type, collRedOp_t op,
              device::LaunchParams& params, cudaStream_t stream);
  void awaitUnitSlots(const DeviceProgramView& program, const device::DeviceLaunch& launch, cudaStream_t stream);

  transport::DeviceChannels& channels_;
  uint64_t timeoutNs_;
  std::unique_ptr<StreamWaits> waits_;  // serialized mode only
};

}  // namespace coll
