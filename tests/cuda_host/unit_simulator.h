// A host emulation of what the device kernels do with lowered programs (src/plan/device_program.h),
// for every rank at once, without a GPU. Each lane of each rank is an independent agent that
// walks its rank's launches unit by unit in the order of kernels/cuda/unit_order.h, exactly as a
// block of the kernel does:
//
//   - a unit waits until every slot it reads is full (and holds the slice it expects) and every
//     slot it writes is free, then reads its lane's share (device::laneRange) of the received
//     slots and the local source, sums them (avg: divides on final steps), and writes the local
//     destination and the send slots;
//   - kStepBarrierBefore and the end of a launch make the lanes of a rank meet;
//   - agents take turns in an order chosen by a seed, so lanes of one rank drift apart as real
//     blocks do: a missing barrier shows up as wrong data, a bad unit order as a deadlock.
//
// Serialized mode is the same walk with one unit per launch (its stream waits are the unit's own
// slot conditions), so one emulation covers both modes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/plan/device_program.h"

namespace coll {
namespace devsim {

// One rank's memory: elements (as doubles) at fake addresses fakeBase + index * elemSize. The
// call's buffers are ranges of it (overlapping for in-place calls).
struct RankMemory {
  std::vector<double> mem;
  uintptr_t fakeBase = 0;
  size_t sendIndex = 0;  // where sendbuff starts in mem
  size_t recvIndex = 0;
  uintptr_t sendAddress(size_t elemSize) const { return fakeBase + sendIndex * elemSize; }
  uintptr_t recvAddress(size_t elemSize) const { return fakeBase + recvIndex * elemSize; }
};

struct SimResult {
  bool ok = true;
  std::string error;  // "deadlock ...", "slot ...", "bad access ...", "slice mismatch ..."
  size_t units = 0;
};

// Runs programs[r] over memory[r] for every rank; seed 0 visits agents in order, others shuffle.
SimResult simulate(const std::vector<DeviceProgram>& programs, std::vector<RankMemory>& memory, unsigned seed);

}  // namespace devsim
}  // namespace coll
