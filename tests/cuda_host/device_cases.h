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

// Plans every rank's program with `geometryOf`, runs them in the simulator with `seed`, and
// compares the memory images. Returns "" or what went wrong.
std::string runDeviceCase(const DeviceCase& c, device::ChannelGeometry (*geometryOf)(device::Protocol), unsigned seed);

}  // namespace devsim
}  // namespace coll
