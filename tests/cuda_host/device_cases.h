// Collective calls for the device-lowering tests: which buffers every rank holds (out of place or
// in the API's in-place layout), their fake addresses for the lowering, and the memory image each
// rank must end with (tests/cuda_host/unit_simulator.h runs the programs).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "src/coll_call.h"
#include "src/plan/device_program.h"
#include "tests/cuda_host/unit_simulator.h"

namespace coll {
namespace devsim {

struct DeviceCase {
  CollType type = CollType::kAllReduce;
  int nranks = 1;
  int root = 0;
  size_t count = 0;
  bool avg = false;
  bool inPlace = false;
  DeviceMode mode = DeviceMode::kConcurrent;
  ProtoChoice protocol = ProtoChoice::kAuto;
  Algo algo = Algo::kAuto;  // forced for this collective, as COLL_ALGO would
  size_t elemSize = 8;
  std::string describe() const;
};

// Whether the API defines an in-place form of the collective (on every rank, or on the root).
bool hasInPlaceForm(CollType type);

// Memory of every rank before the call: guards around the buffers, inputs in the send buffers,
// poison in the receive buffers.
std::vector<RankMemory> initialMemory(const DeviceCase& c);

// The call as rank r issues it, with the fake addresses of its buffers.
CollCall callOf(const DeviceCase& c, const RankMemory& memory, int rank);

// What every rank's memory must hold afterwards.
std::vector<std::vector<double>> expectedMemory(const DeviceCase& c, const std::vector<RankMemory>& initial);

// 4 (LL) and 12 (Simple: 3 lanes) doubles per slice, 4 slots: a step is 2 slices, so small counts
// span many slices, steps and pipeline loops.
inline device::ChannelGeometry smallGeometry(device::Protocol protocol) {
  if (protocol == device::Protocol::kLL) return {device::Protocol::kLL, 1, 32, 4, 512};
  return {device::Protocol::kSimple, 3, 32, 4, 512};
}

// Runs every rank's program in the simulator with `seed` and compares each rank's memory with
// `expected`. Returns "" or what went wrong, beginning with `what`.
std::string simulateAndCompare(const std::string& what, const std::vector<DeviceProgram>& programs,
                               std::vector<RankMemory>& memory, const std::vector<std::vector<double>>& expected,
                               unsigned seed);

// Plans every rank's program with `geometryOf`, runs them in the simulator with `seed`, and
// compares the memory images. Returns "" or what went wrong.
std::string runDeviceCase(const DeviceCase& c, device::ChannelGeometry (*geometryOf)(device::Protocol), unsigned seed);

}  // namespace devsim
}  // namespace coll
