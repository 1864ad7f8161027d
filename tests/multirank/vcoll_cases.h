// Multi-rank checks of the variable-count collectives (collAllGatherV, collReduceScatterV,
// collAllToAllV): each case is a collective, a datatype, an op, a shape of counts and a layout of
// displacements that every rank computes alike, run on one rank and checked against values the
// test computes itself, with guard zones around every buffer and the gaps between receive regions
// checked untouched.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "collective.h"
#include "guarded_memory.h"

namespace colltest {

enum class VColl { kAllGatherV, kReduceScatterV, kAllToAllV };
const char* vcollName(VColl coll);

// How many elements each rank's block (or each pair's message) holds.
enum class CountShape {
  kUneven,    // every block a different size, none empty
  kSomeZero,  // every third rank's block empty
  kAllZero,   // nothing anywhere
  kOnlyOne,   // one rank's block holds everything
  kAlike,     // every block `scale` elements (tests/cuda_host/test_device_variable.cc; not in standardVCases)
};
// Where the receive regions lie: packed in rank order, or in reverse rank order with gaps.
enum class Placement { kPacked, kReversedWithGaps };

struct VCase {
  VColl coll;
  collDataType_t type;
  collRedOp_t op;  // ReduceScatterV only
  CountShape shape;
  size_t scale;  // multiplies every count: large scales run past a pipeline chunk
  Placement placement;
  bool inPlace;  // AllGatherV, ReduceScatterV
  std::string describe() const;
};

// A rank's arrays for a case on `nranks` ranks (every rank derives the others' alike).
struct VLayout {
  std::vector<size_t> sendcounts, sdispls, recvcounts, rdispls;
  size_t sendElems = 0, recvElems = 0;
};
VLayout layoutOf(const VCase& c, int rank, int nranks);
// Elements rank `from` sends rank `to` in an AllToAllV case; a rank's block in the other two.
size_t pairCount(const VCase& c, int from, int to, int nranks);
size_t blockCount(const VCase& c, int of, int nranks);

// Where a case's buffers are while its call runs: host memory, as they are, when none is given.
// Device memory (tests/cuda/gpu_vcollectives.cc): each guarded buffer is copied whole, guards
// included, the call issued on the copies with a stream, and the copies brought back, so that the
// same checks read what the device wrote, in and around the buffers.
class VCaseMemory {
 public:
  using Issue = std::function<collResult_t(const void* send, void* recv, collStream_t stream)>;
  virtual ~VCaseMemory() = default;
  // `send` and `recv` lie in the regions of sendMem or recvMem (in place: both in one).
  virtual collResult_t run(GuardedMemory& sendMem, GuardedMemory& recvMem, const uint8_t* send, uint8_t* recv,
                           const Issue& issue) = 0;
};

// Runs one case on this rank: "" when every output element, every gap and every guard is as
// expected, else what is wrong.
std::string runVCase(collComm_t comm, int rank, int nranks, const VCase& c, VCaseMemory* memory = nullptr);

// Every collective x datatype x shape x placement x in place, every op for ReduceScatterV on a few
// shapes, and large counts for a few datatypes.
std::vector<VCase> standardVCases();

std::vector<std::string> runVCases(collComm_t comm, int rank, int nranks, const std::vector<VCase>& cases);

}  // namespace colltest
