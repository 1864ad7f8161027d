// Calls for the staging tests: one collective on n ranks, its buffers in host memory (standing for
// device memory), its program lowered for each rank as the device engine lowers it (Simple, in a
// small geometry so that small counts span many slices), and the check of every output element
// against tests/multirank/reference.h.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "collective.h"
#include "src/coll_call.h"
#include "src/plan/device_program.h"

namespace coll {
namespace staging_test {

struct StagedCase {
  CollType type = CollType::kAllReduce;
  int nranks = 2;
  size_t count = 0;
  collDataType_t datatype = collFloat32;
  collRedOp_t op = collSum;
  int root = 0;
  Algo algo = Algo::kAuto;  // forced, as COLL_ALGO would
  std::string describe() const;
};

// A small Simple geometry: 3 lanes of 64-byte slots, 4 deep (a slice is 192 bytes).
device::ChannelGeometry smallGeometry(device::Protocol protocol);

// One rank's buffers for one call.
struct RankBuffers {
  std::vector<char> send;
  std::vector<char> recv;
};

// Inputs filled, outputs poisoned.
RankBuffers buffersFor(const StagedCase& c, int rank);
// The call as `rank` issues it over its buffers.
CollCall callFor(const StagedCase& c, RankBuffers& buffers);
// The rank's program, as the device engine plans it for staged connections (with `layout`: two
// levels, the groups and links given).
DeviceProgram programFor(const StagedCase& c, const CollCall& call, int rank, const Algo* overrides,
                         const DeviceLayout* layout = nullptr);
// "" or the first wrong element of the rank's output.
std::string checkOutput(const StagedCase& c, const RankBuffers& buffers, int rank);

// Every collective (barrier included) x a few types and ops x counts that span 0, 1, an odd
// count and many slices, on `nranks` ranks.
std::vector<StagedCase> everyCollective(int nranks);

}  // namespace staging_test
}  // namespace coll
