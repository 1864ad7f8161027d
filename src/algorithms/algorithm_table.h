// The algorithm table: one row per algorithm, the one place an algorithm is described. The
// planner (src/plan/planner.h), COLL_ALGO's parser (src/params.cc), colltopo and docs/algorithms.md
// all read it; the multi-rank and schedule tests run every row. A row says what the algorithm
// serves, whether it can run in a context (host layout, memory kind, device limits), when the
// planner may choose it on its own, what it costs in the model, and how it runs: a schedule
// builder (the executor and the device lowering run its schedule) or a native runner.
//
// Adding an algorithm: its id below, its row in algorithm_table.cc, and one file with its builder,
// model and eligibility (declared in algorithms.h). Nothing else names it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/algorithms/native.h"
#include "src/algorithms/schedule.h"
#include "src/coll_call.h"

namespace coll {

struct PlanContext;
struct Plan;

enum class Algo : uint8_t {
  kAuto,  // no row: let the planner choose
  kOneShot,
  kRing,
  kTree,
  kChain,
  kDirect,
  kPairwise,
  kDirectRead,
  kHier,
  kDoubleTree,
  kBruck,
  kExchange,
};
// Every value an Algo can hold: the size of tables indexed by it.
constexpr size_t kAlgoIdCount = size_t{1} << (8 * sizeof(Algo));

// How the planner may choose a row when COLL_ALGO does not force one.
enum class Selection : uint8_t {
  kModel,        // a candidate where eligible; among the candidates the least modelled time wins
  kShortcut,     // taken over the candidates wherever eligible (one-shot: fits, and beats any pipeline)
  kAlternative,  // offered beside the choice wherever eligible; rank 0's tuner times both (direct reads)
};

// canRun, eligible and modelUs may read only the call's collective, count and element size (and
// the context): a plan depends on nothing else, so engines may keep the plan of a repeated call.
struct AlgorithmRow {
  Algo id;
  const char* name;      // COLL_ALGO's spelling, logs, colltopo
  const char* summary;   // one line, for docs/algorithms.md and colltopo --algorithms
  uint32_t collectives;  // one bit per CollType it serves (collBit)
  Selection selection;
  const char* choice;  // when the planner takes it on its own, in words (what eligible() decides)
  // Whether it can run this call in this context at all (what COLL_ALGO may force). When it
  // cannot and why is not null, *why says why, for the error (the planner asks only then: this
  // runs on every call).
  bool (*canRun)(const CollCall& call, const PlanContext& ctx, std::string* why);
  // Whether the planner may pick it on its own here: where it was measured or modelled to win.
  bool (*eligible)(const CollCall& call, const PlanContext& ctx);
  // Where it is taken outright, over every other row's choice and without the tuner (nullptr:
  // nowhere): a window where measurement showed it wins however the machine behaves.
  bool (*preferred)(const CollCall& call, const PlanContext& ctx);
  // The modelled time of the call, in microseconds.
  double (*modelUs)(const CollCall& call, const PlanContext& ctx);
  // The most peers one step of its schedule receives from, or sends to (0 for native rows): the
  // device path allows fewer than the host executor (PlanContext::maxStepPeers).
  int (*peersPerStep)(const PlanContext& ctx);
  // Exactly one of the two: this rank's schedule, or a runner that executes the call itself.
  Schedule (*build)(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx);
  std::unique_ptr<NativeRunner> (*makeNative)(const NativeArgs& args);
};

constexpr uint32_t collBit(CollType type) { return 1u << static_cast<unsigned>(type); }
inline bool serves(const AlgorithmRow& row, CollType type) { return (row.collectives & collBit(type)) != 0; }

// In the order the planner breaks ties in (and the docs list them).
const std::vector<AlgorithmRow>& algorithmTable();
// The row of `id`; throws CollError(collInternalError) for kAuto or an id without a row.
const AlgorithmRow& algorithmRow(Algo id);
// The row named `name` (any case), or nullptr.
const AlgorithmRow* findAlgorithm(const std::string& name);
// "ring", ...; "auto" for kAuto.
const char* algoName(Algo algo);
// "auto, oneshot, ring, ...": every name COLL_ALGO takes, for messages.
std::string algorithmNames();

}  // namespace coll
