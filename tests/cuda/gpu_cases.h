// The GPU correctness cases: every collective x type x op (reductions) with odd counts, counts
// that span several slices, every root that matters, in place and out of place, LL and Simple,
// against the independent reference of tests/multirank/reference.h; outputs start poisoned and
// every byte around them is checked too.
#pragma once

#include <functional>
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

// Every rank builds the same list. thorough adds large counts for every type. filter, when not
// empty, keeps the cases whose describe() contains it (e.g. "AllReduce float32").
std::vector<GpuCase> gpuCases(int nranks, bool thorough, const std::string& filter = "");

// One rank's buffers for a whole run, allocated once: cudaMalloc and cudaFree synchronize the
// device, and in threads mode a rank that synchronizes while a peer's kernel waits for it would
// stall both. The host side is pinned, so uploads and downloads are cudaMemcpyAsync on the rank's
// stream rather than pageable copies on the legacy stream.
class GpuArena {
 public:
  // Room for the largest of `cases` on `rank`.
  GpuArena(const std::vector<GpuCase>& cases, int rank, int nranks);
  ~GpuArena();
  GpuArena(const GpuArena&) = delete;
  GpuArena& operator=(const GpuArena&) = delete;

  char* device() const { return device_; }
  unsigned char* before() const { return before_; }  // pinned: what is uploaded
  unsigned char* after() const { return after_; }    // pinned: what comes back
  size_t bytes() const { return bytes_; }
  // "" when the allocations succeeded, else what failed.
  const std::string& error() const { return error_; }

 private:
  char* device_ = nullptr;
  unsigned char* before_ = nullptr;
  unsigned char* after_ = nullptr;
  size_t bytes_ = 0;
  std::string error_;
};

// Runs one case on this rank in `arena`: "" when every element and guard byte is right. The
// caller keeps the ranks in step between cases (a store barrier): a peer may still read this
// rank's buffers until it has finished the previous case.
std::string runGpuCase(GpuRank& rank, const GpuCase& c, GpuArena& arena);

// How a case's call is made on the rank's stream, "" or what failed: through the rank's engine
// (runGpuCase), or through the public API (gpu_staged). `call` holds the case's buffers in the
// arena (null where the rank passes none); kSend stands for the ring of sends and receives.
struct GpuCaseRun {
  int rank = 0;
  int nranks = 1;
  cudaStream_t stream = nullptr;
  std::function<std::string(const coll::CollCall& call)> issue;
  std::function<std::string()> asyncError;  // after the stream synchronized: "" or the error
};
std::string runGpuCaseWith(const GpuCaseRun& run, const GpuCase& c, GpuArena& arena);

}  // namespace colltest
