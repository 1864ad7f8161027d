// A host stand-in for one rank's schedule kernel (kernels/cuda/schedule_kernel.cuh with the
// Simple protocol), over real memory: the same flags and slots in the same layout, the same unit
// order, the same arithmetic (kernels/cpu's reduceCopy has the device functors' semantics). Each
// lane is an independent agent, as a block is: it waits until every slot it reads is full and every
// slot it writes is free, reduces its share, then marks the written slots full and the read ones
// free (release stores after the data, acquire loads before it). Lanes of a rank meet at
// kStepBarrierBefore and at the end of each launch, as the kernel's do.
//
// It stands for the GPU in the staging tests: what the proxy reads from a send region was
// written by this, and what it lands in a receive region is consumed by this.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "collective.h"
#include "kernels/cuda/channel_layout.h"
#include "src/plan/device_program.h"
#include "transport/staged/staging_layout.h"

namespace coll {
namespace staging_test {

struct HostKernelArgs {
  const DeviceProgram* program = nullptr;
  collDataType_t type = collFloat32;
  collRedOp_t op = collSum;
  char* sendBuffer = nullptr;
  char* recvBuffer = nullptr;
  const std::vector<device::PeerChannels>* table = nullptr;  // the channels' hostTable()
  device::DeviceStatus* status = nullptr;                    // host view
  uint64_t timeoutNs = 0;  // a lane's wait without progress past this fails the kernel
  int rank = 0;
};

class HostKernel {
 public:
  explicit HostKernel(const HostKernelArgs& args);
  // Moves `lane` over its next event (a unit or a meeting); false when it has to wait or is done.
  bool step(uint32_t lane);
  bool done() const;
  uint32_t lanes() const { return layout_.geometry.lanes; }
  // Runs every lane to the end, in an order shuffled by `seed`. Returns false when a wait saw no
  // progress for the timeout (reported in the status word as kDeviceTimeout) or the host asked to
  // abort (kDeviceAborted), as the kernel's waits do.
  bool runToEnd(unsigned seed);

 private:
  struct Event {
    bool meet;
    uint32_t step;
    uint64_t slice;
  };
  bool runUnit(uint32_t lane, const device::DeviceStep& step, uint64_t slice);
  char* local(device::DeviceBuffer buffer, uint64_t offset, uint64_t elem) const;
  void report(uint32_t error);

  HostKernelArgs args_;
  transport::StagingLayout layout_;
  std::vector<Event> events_;
  std::vector<size_t> position_;     // per lane
  std::vector<size_t> meetsPassed_;  // per lane
  std::vector<bool> arrived_;        // per lane: counted at its current meeting
  std::vector<uint32_t> arrivals_;   // per meeting
};

}  // namespace staging_test
}  // namespace coll
