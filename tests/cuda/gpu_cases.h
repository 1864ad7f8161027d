// The GPU correctness cases: every collective x type x op (reductions) with odd counts, counts
// that span several slices, every root that matters, in place and out of place, LL and Simple,
// against the independent reference of tests/multirank/reference.h; outputs start poisoned and
// every byte around them is checked too.
#pragma once

#include <string>
#include <vector>

#include "collective.h"
#include "src/coll_call.h"
#include "src/params.h"
#include "tests/cuda/gpu_ranks.h"

namespace colltest {

struct GpuCase {
  coll::CollType type;  // kSend: a ring of sends and receives in one group
  collDataType_t datatype;
  collRedOp_t op;
  size_t count;
  int root;
  bool inPlace;
  coll::ProtoChoice protocol;
  std::string describe() const;
};

// Every rank builds the same list. thorough adds large counts for every type.
std::vector<GpuCase> gpuCases(int nranks, bool thorough);

// Runs one case on this rank: "" when every element and guard byte is right.
std::string runGpuCase(GpuRank& rank, const GpuCase& c);

}  // namespace colltest
