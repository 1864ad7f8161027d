// The host's entry into the device kernels: the parameters of one launch and the function that
// launches the kernel instantiated for a (datatype, op) pair. Plain C++: no CUDA header is needed
// to include it (the stream is passed as a void*, a cudaStream_t).
#pragma once

#include <cstdint>

#include "collective.h"
#include "kernels/cuda/channel_layout.h"
#include "kernels/cuda/device_step.h"

namespace coll {
namespace device {

// Everything a launch needs, passed by value (as a __grid_constant__ parameter): graph capture
// records it with the launch, and nothing in it refers to host memory that could change later.
struct LaunchParams {
  DeviceStep steps[kMaxLaunchSteps];
  uint32_t nsteps = 0;
  Protocol protocol = Protocol::kSimple;
  uint64_t firstRound = 0;           // run only these rounds of every batch (serialized mode runs
  uint64_t roundLimit = UINT64_MAX;  // one unit per launch); [0, UINT64_MAX) runs everything
  char* sendBuffer = nullptr;        // the call's buffers (device memory)
  char* recvBuffer = nullptr;
  const PeerChannels* peers = nullptr;        // device table of this rank's connections, one per rank
  DeviceStatus* status = nullptr;             // host-mapped: errors out, abort in
  unsigned long long* laneBarrier = nullptr;  // device counter for kStepBarrierBefore
  int avgDivisor = 0;                         // nranks for collAvg, else 0
  uint64_t timeoutNs = 0;                     // a wait longer than this fails the launch
};

// A direct all-reduce (direct_kernel.cuh): ranks that are threads of one process reduce straight
// from each other's buffers. Passed by value, like LaunchParams.
struct DirectParams {
  const char* sendBuffer = nullptr;
  char* recvBuffer = nullptr;
  uint64_t count = 0;                   // elements of the whole call
  const PeerChannels* peers = nullptr;  // device table of this rank's connections, one per rank
  DeviceStatus* status = nullptr;
  uint32_t rank = 0;
  uint32_t nranks = 1;  // at most kMaxDevicePeers
  int avgDivisor = 0;
  uint64_t timeoutNs = 0;
  // Rank processes (MPS): every rank's buffers as mapped in this process, which the host
  // exchanged before the launch; the addresses the ranks publish are then not read (they are
  // each process's own).
  uint32_t mapped = 0;
  const char* mappedSends[kMaxDevicePeers] = {};
  char* mappedRecvs[kMaxDevicePeers] = {};
};

// Launches the direct all-reduce kernel of (type, op) with kDirectBlocks blocks; returns the
// cudaError_t of the launch as an int.
int launchDirectAllReduceKernel(collDataType_t type, collRedOp_t op, const DirectParams& params, void* stream);

// Launches the schedule kernel of (type, op) on `stream` (a cudaStream_t; NULL is the legacy
// default stream) with geometryOf(params.protocol).lanes blocks. Returns the cudaError_t of the
// launch as an int (0 on success). type and op must be valid enum values.
int launchScheduleKernel(collDataType_t type, collRedOp_t op, const LaunchParams& params, void* stream);

// Whether the table has a kernel for (type, op): true for every valid pair (for tests and asserts).
bool hasScheduleKernel(collDataType_t type, collRedOp_t op);

// How many blocks of the schedule kernels (and of the direct kernels, which run beside them) one SM
// of the current device holds at once (the least over the tables); 0 when CUDA cannot say. Concurrent mode needs every
// lane of every rank on a GPU resident at the same time, since they wait for each other.
int scheduleKernelBlocksPerSm();

}  // namespace device
}  // namespace coll
