#include "src/exec/device_launcher.h"

#include <vector>

#include "common/cuda_check.h"
#include "common/error.h"
#include "kernels/cuda/launch.h"

namespace coll {

DeviceLauncher::DeviceLauncher(transport::DeviceChannels& channels, int timeoutMs)
    : channels_(channels), timeoutNs_(static_cast<uint64_t>(timeoutMs > 0 ? timeoutMs : 1) * 1000000ull) {
  if (!channels_.kernelsConcurrent()) waits_ = std::make_unique<StreamWaits>();
}

void DeviceLauncher::enqueue(const DeviceProgramView& program, collDataType_t type, collRedOp_t op,
                             const void* sendbuff, void* recvbuff, cudaStream_t stream) {
  if (program.nlaunches == 0) return;
  const bool serialized = !channels_.kernelsConcurrent();
  if (serialized && program.protocol != device::Protocol::kSimple)
    throwError(collInternalError, "serialized device mode needs the Simple protocol (the planner chose LL)");
  const device::ChannelGeometry built = device::geometryOf(program.protocol);
  const device::ChannelGeometry& g = program.geometry;
  if (g.protocol != built.protocol || g.lanes != built.lanes || g.slotBytes != built.slotBytes ||
      g.depth != built.depth || g.threads != built.threads)
    throwError(collInternalError, "device program cut for another channel geometry than the kernels'");
  device::LaunchParams params;
  params.protocol = program.protocol;
  // A call without buffers (barrier) moves its byte through the domain's scratch memory.
  params.sendBuffer = const_cast<char*>(static_cast<const char*>(sendbuff != nullptr ? sendbuff : channels_.scratch()));
  params.recvBuffer = static_cast<char*>(recvbuff != nullptr ? recvbuff : channels_.scratch());
  params.peers = channels_.deviceTable();
  params.status = channels_.deviceStatus();
  params.laneBarrier = channels_.laneBarrier();
  params.avgDivisor = program.avgDivisor;
  params.timeoutNs = timeoutNs_;
  for (size_t i = 0; i < program.nlaunches; ++i) {
    const device::DeviceLaunch& l = program.launches[i];
    if (serialized) awaitUnitSlots(program, l, stream);
    launch(program, l, type, op, params, stream);
  }
}

void DeviceLauncher::enqueueDirect(int rank, int nranks, uint64_t count, int avgDivisor, collDataType_t type,
                                   collRedOp_t op, const void* sendbuff, void* recvbuff, cudaStream_t stream,
                                   const char* const* mappedSends, char* const* mappedRecvs) {
  const bool mapped = mappedSends != nullptr && mappedRecvs != nullptr;
  if (!(channels_.sharedAddressSpace() || mapped) || !channels_.kernelsConcurrent())
    throwError(collInternalError,
               "the direct all-reduce needs ranks that are threads of one process, or processes whose buffers "
               "were mapped, with kernels running together");
  device::DirectParams params;
  if (mapped) {
    params.mapped = 1;
    for (int r = 0; r < nranks; ++r) {
      params.mappedSends[r] = mappedSends[r];
      params.mappedRecvs[r] = mappedRecvs[r];
    }
  }
  params.sendBuffer = static_cast<const char*>(sendbuff);
  params.recvBuffer = static_cast<char*>(recvbuff);
  params.count = count;
  params.peers = channels_.deviceTable();
  params.status = channels_.deviceStatus();
  params.rank = static_cast<uint32_t>(rank);
  params.nranks = static_cast<uint32_t>(nranks);
  params.avgDivisor = avgDivisor;
  params.timeoutNs = timeoutNs_;
  COLL_CUDACHECK(static_cast<cudaError_t>(device::launchDirectAllReduceKernel(type, op, params, stream)));
}

void DeviceLauncher::launch(const DeviceProgramView& program, const device::DeviceLaunch& l, collDataType_t type,
                            collRedOp_t op, device::LaunchParams& params, cudaStream_t stream) {
  if (l.nsteps == 0 || l.nsteps > static_cast<uint32_t>(device::kMaxLaunchSteps) ||
      l.firstStep + static_cast<size_t>(l.nsteps) > program.nsteps)
    throwError(collInternalError, "device launch of steps [%u, +%u) outside a program of %zu steps", l.firstStep,
               l.nsteps, program.nsteps);
  for (uint32_t i = 0; i < l.nsteps; ++i) params.steps[i] = program.steps[l.firstStep + i];
  params.nsteps = l.nsteps;
  params.firstRound = l.firstRound;
  params.roundLimit = l.roundLimit;
  COLL_CUDACHECK(static_cast<cudaError_t>(device::launchScheduleKernel(type, op, params, stream)));
}

void DeviceLauncher::awaitUnitSlots(const DeviceProgramView& program, const device::DeviceLaunch& l,
                                    cudaStream_t stream) {
  const device::DeviceStep& step = program.steps[l.firstStep];
  if (!device::hasPeers(step)) return;
  const device::ChannelGeometry geometry = device::geometryOf(device::Protocol::kSimple);
  const uint64_t slice = l.firstRound - step.firstRound;
  const std::vector<device::PeerChannels>& table = channels_.hostTable();
  std::vector<AwaitedWord> words;
  for (uint32_t lane = 0; lane < geometry.lanes; ++lane) {
    for (int i = 0; i < step.nrecv; ++i) {
      const uint32_t slot = static_cast<uint32_t>((step.recvSeq[i] + slice) % geometry.depth);
      const char* flag = table[step.recvPeers[i]].recv + device::simpleFlagOffset(lane, slot);
      words.push_back({reinterpret_cast<const uint32_t*>(flag), 1u});
    }
    for (int i = 0; i < step.nsend; ++i) {
      const uint32_t slot = static_cast<uint32_t>((step.sendSeq[i] + slice) % geometry.depth);
      const char* flag = table[step.sendPeers[i]].send + device::simpleFlagOffset(lane, slot);
      words.push_back({reinterpret_cast<const uint32_t*>(flag), 0u});
    }
  }
  waits_->enqueue(stream, words);
}

}  // namespace coll
