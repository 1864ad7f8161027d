// The shared driver of the *_perf programs (nccl-tests' flags and output). Each program is one
// CollDescriptor, defined in its own small file, that says how many elements a size means, what
// each rank's buffers hold, what the output must be, the busbw factor and how to make one call.
#pragma once

#include <cstddef>
#include <vector>

#include "collective.h"
#include "perf_counts.h"
#include "perf_data.h"

namespace collperf {

struct LayoutArgs {
  size_t count;  // the size being measured in elements (bytes / element size, rounded down)
  int nranks;
  int rank;
  int root;
  CountPattern counts;  // --counts: the variable-count programs' split between ranks
};

// One rank's buffers for one size. Counts are in elements.
struct Layout {
  size_t paramCount = 0;  // the count argument of the call (nccl-tests' "count" column)
  size_t sendCount = 0;   // what the send buffer holds (as on the root, for rooted collectives)
  size_t recvCount = 0;   // what the receive buffer holds
  bool sendUsed = true;   // false: this rank passes NULL (e.g. scatter's sendbuff off the root)
  bool recvUsed = true;
  // In place, both pointers lie in one buffer, at these offsets.
  size_t inplaceSendOffset = 0;
  size_t inplaceRecvOffset = 0;
  // The variable-count programs' arrays (perf_counts.h), one entry per rank; empty elsewhere.
  std::vector<size_t> sendcounts, sdispls, recvcounts, rdispls;
};

struct CallArgs {
  const void* sendbuff;
  void* recvbuff;
  size_t count;  // Layout::paramCount
  collDataType_t type;
  collRedOp_t op;
  int root;
  int rank;
  int nranks;
  collComm_t comm;
  collStream_t stream;  // NULL for host memory, the program's cudaStream_t for GPU memory
  const Layout* layout;  // its arrays, for the variable-count programs
};

struct CollDescriptor {
  const char* programName;  // "all_reduce_perf"
  const char* apiName;      // "collAllReduce", for error messages
  bool hasOp;
  bool hasRoot;
  bool inPlace;  // false: the API defines no in-place form; the in-place columns print N/A
  Layout (*layout)(const LayoutArgs& a);
  // Where this rank's output elements come from (nothing to check when it has no output).
  void (*expected)(const LayoutArgs& a, std::vector<Segment>* segments);
  double (*busBwFactor)(int nranks);
  collResult_t (*run)(const CallArgs& c);
  // The call takes host memory only (the variable-count collectives, for now): -m device is
  // refused, and the default is host memory.
  bool hostMemoryOnly = false;
};

// The whole program: parse the flags, init from the environment, run the sweep, print the table.
int perfMain(int argc, char** argv, const CollDescriptor& coll);

}  // namespace collperf
