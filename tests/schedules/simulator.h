// A network-free simulator of schedules: every rank's schedule runs in one process over
// simulated slot FIFOs, with the slicing and step semantics of the host executor
// (src/exec/executor.cc):
//
//   - steps run in order; a run of steps chained by joinNext (a batch) progresses together, and
//     within a batch the earlier step that uses a connection keeps it until it is done
//     (Executor::claim); zero-count steps exchange nothing;
//   - a step with peers moves one slice of min(remaining, slotElems) elements at a time (one
//     without peers moves everything at once), only when every receive peer's FIFO holds a slot
//     and every send peer's FIFO has a free one; a received slot of another size is an error;
//   - one slice sums (in double) the received slots and the local source, divides by nranks on
//     finalAvg steps of an averaging call, and writes the local destination and the send slots.
//
// Ranks take turns round-robin (in order, in reverse, or shuffled per pass); one turn is one
// executor round: every unfinished step of the rank's batch moves while it can (or a bounded
// number of slices). A full pass over the ranks that changes nothing while some rank is
// unfinished is a deadlock: no rank can move whatever the order.
//
// Each rank's memory is one vector of doubles holding its send and receive buffers (disjoint or
// in place) between guard elements, so that the test can compare the whole image after the run.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "src/algorithms/schedule.h"

namespace coll {
namespace schedsim {

struct SimConfig {
  int depth = 8;         // slots per FIFO (per ordered pair of ranks)
  size_t slotElems = 4;  // elements per slot
  bool greedy = true;    // keep moving a step while it can (as the executor does)
  bool reverse = false;  // visit ranks from n-1 down to 0
  // Non-zero: a pseudo-random interleaving from this seed. Each pass visits the ranks in a
  // shuffled order, and each turn moves a step at most 1..4 slices (greedy is ignored).
  unsigned seed = 0;
};

// One rank's memory. BufferRef{kSend, off} is mem[sendBase + off] and must stay below sendLen;
// likewise for kRecv. A length of 0 means the rank has no such buffer in the API's terms.
struct RankMemory {
  std::vector<double> mem;
  size_t sendBase = 0, sendLen = 0;
  size_t recvBase = 0, recvLen = 0;
};

struct SimResult {
  bool ok = true;
  std::string error;  // starts with "deadlock", "slice mismatch", "bad access", ... when !ok
  size_t passes = 0;  // passes over all ranks
  size_t slicesMoved = 0;
};

// Runs schedules[r] for every rank r over memory[r]. `avg` is whether the call's op is collAvg.
SimResult simulate(const std::vector<Schedule>& schedules, std::vector<RankMemory>& memory, const SimConfig& config,
                   bool avg);

// Structural checks that need no data: peers in range, never the rank itself, no repeated peer in
// one step, nrecv/nsend <= kMaxStepPeers, every non-empty step has a source and a destination,
// nothing writes the send buffer, finalAvg only when averaging, steps with peers move at most
// maxStepElems (when maxStepElems > 0), and for every ordered pair of ranks the slices one sends equal the
// slices the other receives (slotElems per slice). Returns "" or a description of the first
// problem.
std::string checkStructure(const std::vector<Schedule>& schedules, size_t slotElems, bool avg, size_t maxStepElems);

}  // namespace schedsim
}  // namespace coll
