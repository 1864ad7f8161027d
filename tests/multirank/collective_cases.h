// One multi-rank check: a collective with a datatype, op, count, root and buffer layout, run on
// one rank of a communicator and verified against the reference (reference.h). Every rank runs
// the same list of cases in the same order, as collectives require.
#pragma once

#include <string>
#include <vector>

#include "collective.h"

namespace colltest {

enum class Coll {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kGather,
  kScatter,
  kAllToAll,
  kSendRecv,
  kBarrier
};
const char* collName(Coll coll);

struct Case {
  Coll coll;
  collDataType_t type;
  collRedOp_t op;
  size_t count;
  int root;
  bool inPlace;
  std::string describe() const;
};

// Issues the case's collective (not a send/receive) with these buffers; its result.
collResult_t issueCase(collComm_t comm, const Case& c, const void* send, void* recv);

// Runs one case on this rank. Returns "" when every output element and every guard byte is as
// expected, otherwise a description of the first problems.
std::string runCase(collComm_t comm, int rank, int nranks, const Case& c);

// The case list for a communicator of nranks: every collective x type x op (for reductions) x
// counts {0, 1, odd, not a multiple of nranks} x in-place/out-of-place x every root, plus counts
// larger than a pipeline chunk for a few types. `thorough` adds every type to the large counts.
std::vector<Case> standardCases(int nranks, bool thorough);

// Runs cases and returns the failures (empty when all passed).
std::vector<std::string> runCases(collComm_t comm, int rank, int nranks, const std::vector<Case>& cases);

}  // namespace colltest
