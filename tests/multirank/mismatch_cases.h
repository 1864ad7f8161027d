// Calls whose count or datatype differs between ranks (docs/errors.md, "Counts and datatypes that
// differ"): every buffer sits between guard zones (guarded_memory.h), and each rank checks that
// nothing was written outside its buffers and that it failed with a message naming both ranks'
// counts, in the call itself or, where its part of the call needs nothing from the others (a
// broadcast's root, a gather's sender, a send), at its next call.
#pragma once

#include <string>
#include <vector>

#include "collective.h"
#include "collective_cases.h"

namespace colltest {

// What one rank passes: rank 0 takes ranks[0], every other rank ranks[1].
struct RankArgs {
  size_t count;
  collDataType_t type;
};

struct MismatchCase {
  Coll coll;  // kSendRecv: rank 0 sends to rank 1, which receives (the other ranks sit out)
  RankArgs ranks[2];
  int root;
  bool inPlace;
  std::string describe() const;
};

// Each collective (and a send against a receive) with: rank 1's count half of rank 0's and
// double it, at sizes that take every path (a tiny, an inline and a one-shot input, FIFO slots,
// direct reads); a double against a float. In place
// where the collective allows it, and out of place. zeroCounts: also a count of zero against one
// that is not, which only ranks that share a host detect (the zero-count rank sends nothing).
std::vector<MismatchCase> mismatchCases(bool zeroCounts);

// Runs the case on this rank of `comm`, a communicator made for it alone (the mismatch fails it),
// and returns what went wrong: "" when every check passed.
std::string runMismatch(collComm_t comm, int rank, int nranks, const MismatchCase& c);

// Every case on a fresh communicator split from `comm`, one after another; the failures.
std::vector<std::string> runMismatches(collComm_t comm, int rank, int nranks, const std::vector<MismatchCase>& cases);

}  // namespace colltest
