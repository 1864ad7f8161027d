// The collectives the schedule builders implement, as simulator cases: which builder, the
// buffers each rank holds (out of place or in the in-place layout of validate.cc), and the
// memory image every rank must end with, from the definition of the collective.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "src/algorithms/algorithm_table.h"
#include "src/algorithms/schedule.h"
#include "src/coll_call.h"
#include "tests/schedules/simulator.h"

namespace coll {
namespace schedsim {

enum class Builder {
  kRingAllReduce,
  kRingReduceScatter,
  kRingAllGather,
  kChainBroadcast,
  kTreeBroadcast,
  kTreeReduce,
  kTreeAllReduce,
  kDirectGather,
  kDirectScatter,
  kPairwiseAllToAll,
  // Rings in host order, and the host-aware all-reduces, over simulatedHosts(n).
  kHostRingAllReduce,
  kHostRingReduceScatter,
  kHostRingAllGather,
  kHierAllReduce,
  kDoubleTreeAllReduce,
  // A row of the algorithm table on one collective it serves (Case::algo, Case::type), built the
  // way the planner builds it (buildSchedule, over simulatedHosts): a row added to the table is
  // simulated with no change here.
  kTableRow,
  kCount
};

struct Case {
  Builder builder = Builder::kRingAllReduce;
  Algo algo = Algo::kAuto;                  // with kTableRow
  CollType type = CollType::kAllReduce;     // with kTableRow
  int nranks = 1;
  int root = 0;
  size_t count = 0;  // the C call's count (per rank for gather-like calls)
  size_t maxStepElems = 1;
  bool avg = false;
  bool inPlace = false;
  SimConfig sim;

  std::string describe() const;
};

const char* builderName(Builder b);
CollType collectiveOf(const Case& c);   // the collective the case's schedules implement
const char* expectedAlgorithm(const Case& c);  // the Schedule::algorithm they must report
bool isRooted(const Case& c);
bool isReducing(const Case& c);
bool usesMaxStep(const Case& c);    // whether maxStepElems bounds its steps
bool allowsInPlace(const Case& c);  // the API has an in-place form for the collective

std::vector<Schedule> buildAll(const Case& c);
// A table row's case: the call and context the row is built with, and whether the row can run it
// (always true for the other builders).
CollCall tableRowCall(const Case& c);
PlanContext tableRowContext(const Case& c);
bool tableRowCanRun(const Case& c);

// The host layout the host-aware builders are simulated on: ranks dealt round-robin to
// min(n, 3) hosts (so host order differs from rank order and hosts hold different counts).
std::vector<std::vector<int>> simulatedHosts(int nranks);

// Initial memory of every rank: guards and unused space hold distinct sentinels, send buffers
// hold distinct integers (sums stay exact in double).
std::vector<RankMemory> initialMemory(const Case& c);

// What every rank's memory must hold afterwards, computed from `initial`.
std::vector<std::vector<double>> expectedMemory(const Case& c, const std::vector<RankMemory>& initial);

// Runs one case: structure check, simulation, comparison of every rank's whole memory image.
// Returns "" or what went wrong. `schedules` may be given to run altered schedules.
std::string runCase(const Case& c);
std::string runCase(const Case& c, const std::vector<Schedule>& schedules);

}  // namespace schedsim
}  // namespace coll
