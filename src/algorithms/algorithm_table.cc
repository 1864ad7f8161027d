#include "src/algorithms/algorithm_table.h"

#include <strings.h>

#include "common/error.h"
#include "src/algorithms/algorithms.h"
#include "src/algorithms/direct_read.h"
#include "src/algorithms/oneshot.h"

namespace coll {
namespace {

using namespace algorithms;

bool anywhere(const CollCall&, const PlanContext&, std::string*) { return true; }
bool always(const CollCall&, const PlanContext&) { return true; }
constexpr bool (*nowhere)(const CollCall&, const PlanContext&) = nullptr;
// The host-aware algorithms: modelled, and measured, where some pair of ranks crosses a network.
bool acrossHosts(const CollCall&, const PlanContext& ctx) { return ctx.crossesNetwork; }
int onePeer(const PlanContext&) { return 1; }
int twoPeers(const PlanContext&) { return 2; }
int noSteps(const PlanContext&) { return 0; }

constexpr uint32_t kAllButPointToPoint =
    collBit(CollType::kAllReduce) | collBit(CollType::kBroadcast) | collBit(CollType::kReduce) |
    collBit(CollType::kAllGather) | collBit(CollType::kReduceScatter) | collBit(CollType::kGather) |
    collBit(CollType::kScatter) | collBit(CollType::kAllToAll) | collBit(CollType::kBarrier) |
    collBit(CollType::kAllGatherV) | collBit(CollType::kReduceScatterV);

}  // namespace

const std::vector<AlgorithmRow>& algorithmTable() {
  // Ties between modelled candidates go to the earlier row.
  static const std::vector<AlgorithmRow> table = {
      {Algo::kOneShot, "oneshot",
       "one host, small inputs: every rank publishes its input once and computes its output from everyone's",
       kAllButPointToPoint, Selection::kShortcut,
       "whenever every rank shares one host, the input fits COLL_ONESHOT_BYTES and its model beats a pipeline's; "
       "always for a barrier",
       oneshotCanRun, oneshotEligible, nowhere, modelOneShot, noSteps, nullptr, makeOneShot},
      {Algo::kDirectRead, "cma",
       "one host, large inputs: single-copy reads straight from the peers' buffers (cross-memory attach)",
       collBit(CollType::kAllReduce) | collBit(CollType::kReduceScatter) | collBit(CollType::kAllGather) |
           collBit(CollType::kBroadcast) | collBit(CollType::kAllToAll) | collBit(CollType::kGather) |
           collBit(CollType::kScatter),
       Selection::kAlternative,
       "beside the choice from COLL_DIRECT_READ_BYTES of input per rank on one host, up to 16 ranks: rank 0 times both "
       "and keeps the faster (a 2-rank all-gather from 32 KiB; an all-to-all from 128 KiB where ranks outnumber "
       "cores); a 2-rank broadcast, all-to-all, scatter or gather from 32 KiB up to COLL_DIRECT_READ_BYTES always",
       directReadCanRun, directReadEligible, directReadPreferred, modelDirectRead, noSteps, nullptr, makeDirectRead},
      {Algo::kRing, "ring", "pipelined ring in host order: bandwidth-optimal, n-1 steps per phase",
       collBit(CollType::kAllReduce) | collBit(CollType::kReduceScatter) | collBit(CollType::kAllGather) |
           collBit(CollType::kAllGatherV) | collBit(CollType::kReduceScatterV),
       Selection::kModel,
       "all-gather and reduce-scatter (and their variable-count forms); all-reduce on one host, and across hosts "
       "where its model is cheapest",
       anywhere, always, nowhere, modelRing, onePeer, buildRing, nullptr},
      {Algo::kDoubleTree, "dbtree",
       "two complementary binary trees, each carrying half of the data: log-depth and every link busy",
       collBit(CollType::kAllReduce), Selection::kModel, "all-reduce across hosts, where its model is cheapest",
       anywhere, acrossHosts, nowhere, modelDoubleTree, twoPeers, buildDoubleTree, nullptr},
      {Algo::kTree, "tree", "binomial tree: log2(n) rounds to or from a root, the latency optimum",
       collBit(CollType::kAllReduce) | collBit(CollType::kBroadcast) | collBit(CollType::kReduce) |
           collBit(CollType::kBarrier),
       Selection::kModel,
       "reduce and barrier; broadcast on 4 or more ranks below 1 MiB; all-reduce across hosts where its model is "
       "cheapest",
       anywhere, treeEligible, nowhere, modelTree, treePeersPerStep, buildTree, nullptr},
      {Algo::kHier, "hier",
       "two levels: reduce within each host, ring among the hosts' leaders, broadcast within each host",
       collBit(CollType::kAllReduce), Selection::kModel, "all-reduce across hosts, where its model is cheapest",
       anywhere, acrossHosts, nowhere, modelHier, hierPeersPerStep, buildHier, nullptr},
      {Algo::kChain, "chain", "pipelined chain from the root: one hop per step, the bandwidth optimum for broadcast",
       collBit(CollType::kBroadcast), Selection::kModel, "broadcast on up to 3 ranks, and from 1 MiB", anywhere,
       chainEligible, nowhere, modelChain, onePeer, buildChain, nullptr},
      {Algo::kDirect, "direct", "every rank sends to (or receives from) the root directly, all at once",
       collBit(CollType::kGather) | collBit(CollType::kScatter), Selection::kModel, "gather and scatter", anywhere,
       always, nowhere, modelDirect, onePeer, buildDirect, nullptr},
      {Algo::kPairwise, "pairwise", "every pair of ranks exchanges its blocks directly, all at once",
       collBit(CollType::kAllToAll) | collBit(CollType::kAllToAllV), Selection::kModel,
       "all-to-all (and its variable-count form)", anywhere, always, nowhere, modelPairwise, onePeer, buildPairwise,
       nullptr},
      {Algo::kBruck, "bruck",
       "Bruck's all-gather: ceil(log2 n) rounds of doubling block ranges instead of n-1 ring steps",
       collBit(CollType::kAllGather), Selection::kModel,
       "all-gather across hosts, where its model (fewer rounds, but more blocks on a host's link) beats the ring's",
       anywhere, acrossHosts, nowhere, modelBruck, onePeer, buildBruck, nullptr},
      {Algo::kExchange, "exchange",
       "every rank sends its whole input to every other rank and reduces all n inputs in rank order: one message "
       "latency",
       collBit(CollType::kAllReduce), Selection::kModel,
       "all-reduce among up to 4 ranks that do not all share memory (sockets, or across hosts), where its model "
       "is cheapest, on inputs below 512 KiB (and at most half a FIFO): small inputs, and between 2 ranks any of them",
       exchangeCanRun, exchangeEligible, nowhere, modelExchange, exchangePeersPerStep, buildExchange, nullptr},
  };
  return table;
}

namespace {

// The row of `id`, or nullptr. Looked up on every call's way to its algorithm: an index by id,
// made once.
const AlgorithmRow* rowById(Algo id) {
  static const std::vector<const AlgorithmRow*> byId = [] {
    std::vector<const AlgorithmRow*> index(kAlgoIdCount, nullptr);
    for (const AlgorithmRow& row : algorithmTable()) index[static_cast<size_t>(row.id)] = &row;
    return index;
  }();
  return byId[static_cast<size_t>(id)];
}

}  // namespace

const AlgorithmRow& algorithmRow(Algo id) {
  const AlgorithmRow* row = rowById(id);
  if (row == nullptr) throwError(collInternalError, "no algorithm has id %d", static_cast<int>(id));
  return *row;
}

const AlgorithmRow* findAlgorithm(const std::string& name) {
  for (const AlgorithmRow& row : algorithmTable())
    if (strcasecmp(row.name, name.c_str()) == 0) return &row;
  return nullptr;
}

const char* algoName(Algo algo) {
  if (algo == Algo::kAuto) return "auto";
  const AlgorithmRow* row = rowById(algo);
  return row != nullptr ? row->name : "?";
}

std::string algorithmNames() {
  std::string names = "auto";
  for (const AlgorithmRow& row : algorithmTable()) names += std::string(", ") + row.name;
  return names;
}

}  // namespace coll
