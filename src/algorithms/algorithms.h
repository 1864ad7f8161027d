// The algorithm families. Each builds the schedule of one rank; all are pure functions of their
// arguments. maxStepElems bounds the elements one step moves: the planner sets it below the
// transport FIFO's capacity so that ring steps, which wait on each other in a cycle, can never
// fill every FIFO at once (see ring.cc).
#pragma once

#include <string>
#include <vector>

#include "src/algorithms/plan_context.h"
#include "src/algorithms/schedule.h"
#include "src/coll_call.h"

namespace coll {
namespace algorithms {

// ring.cc: bandwidth-optimal pipelined rings.
Schedule ringAllReduce(int nranks, int rank, size_t count, size_t maxStepElems, bool avg);
Schedule ringReduceScatter(int nranks, int rank, size_t recvCount, size_t maxStepElems, bool avg);
Schedule ringAllGather(int nranks, int rank, size_t sendCount, size_t maxStepElems);
Schedule chainBroadcast(int nranks, int rank, int root, size_t count, size_t maxStepElems);
// The same rings in a given order: order[p] is the rank at ring position p (a permutation of
// 0..n-1). Rings ordered host by host cross the network once per host.
Schedule ringAllReduce(const std::vector<int>& order, int rank, size_t count, size_t maxStepElems, bool avg);
Schedule ringReduceScatter(const std::vector<int>& order, int rank, size_t recvCount, size_t maxStepElems, bool avg);
Schedule ringAllGather(const std::vector<int>& order, int rank, size_t sendCount, size_t maxStepElems);
// Variable counts (src/validate_counts.h): counts[p] and displs[p] describe rank p's block.
// All-gather: rank p's counts[p] elements land at displs[p] of every rank's receive buffer.
Schedule ringAllGatherV(const std::vector<int>& order, int rank, const size_t* counts, const size_t* displs,
                        size_t maxStepElems);
// Reduce-scatter: the send buffer holds every rank's block in rank order, counts[p] elements each;
// rank p's reduced block lands at the start of its receive buffer.
Schedule ringReduceScatterV(const std::vector<int>& order, int rank, const size_t* counts, size_t maxStepElems,
                            bool avg);
std::vector<int> identityOrder(int nranks);
// Where `value` stands in `list` (a ring position, a rank's index in its host), or -1.
int indexOf(const std::vector<int>& list, int value);

// hierarchy.cc: algorithms that know which ranks share a host.
// hosts[h] lists host h's ranks, ascending; hosts in order of their lowest rank.
using HostLayout = std::vector<std::vector<int>>;
HostLayout singleHostLayout(int nranks);
// Host by host: the ring order that crosses the network once per host.
std::vector<int> hostOrderedRing(const HostLayout& hosts);
// Per rank, the index of its host in `hosts` (0 for every rank when `hosts` is empty).
std::vector<int> hostIndexOfRanks(const HostLayout& hosts, int nranks);
// Gives the planner the host layout (ctx.nranks set): ctx.hosts, and what the cost models read
// from it: whether some pair crosses the network, the ring in host order, and the levels of the
// binomial tree that cross between hosts.
void describeHostLayout(PlanContext& ctx, const HostLayout& hosts);
// Two levels: each host reduces to its first rank (binomial tree over shared memory), the
// hosts' first ranks all-reduce in a ring over the network, and each host broadcasts back.
// Network traffic per host is 2(h-1)/h of the data instead of 2(n-1)/n.
Schedule hierarchicalAllReduce(const HostLayout& hosts, int rank, size_t count, size_t maxStepElems, bool avg);
// Two complementary binary trees over the ring order, each reducing and broadcasting half of
// the data: a rank that is inner in one tree is (mostly) a leaf in the other, so both halves
// move at once and every link carries about the data once each way (NCCL's double binary tree).
Schedule doubleTreeAllReduce(const std::vector<int>& order, int rank, size_t count, size_t maxStepElems, bool avg);

// bruck.cc: Bruck's all-gather, ceil(log2 n) rounds over the ring positions of `order` (blocks at
// their natural place, no final rotation); fewer synchronisations than the ring across hosts.
Schedule bruckAllGather(const std::vector<int>& order, int rank, size_t sendCount, size_t maxStepElems);

// tree.cc: binomial trees for rooted collectives and latency-bound all-reduce.
Schedule treeBroadcast(int nranks, int rank, int root, size_t count, size_t maxStepElems);
Schedule treeReduce(int nranks, int rank, int root, size_t count, size_t maxStepElems, bool avg);
Schedule treeAllReduce(int nranks, int rank, size_t count, size_t maxStepElems, bool avg);

// direct.cc: every rank talks straight to the others; all transfers progress together.
Schedule directGather(int nranks, int rank, int root, size_t sendCount);
Schedule directScatter(int nranks, int rank, int root, size_t recvCount);
Schedule pairwiseAllToAll(int nranks, int rank, size_t count);
// Variable counts: sendcounts[p] elements from sdispls[p] go to rank p, recvcounts[p] from rank p
// land at rdispls[p]; each pair's steps carry callTag with their count in its size bits.
Schedule pairwiseAllToAllV(int nranks, int rank, const size_t* sendcounts, const size_t* sdispls,
                           const size_t* recvcounts, const size_t* rdispls, uint64_t callTag);

// exchange.cc: every rank sends its input to every other rank and reduces all n itself.
Schedule exchangeAllReduce(int nranks, int rank, size_t count, bool avg);

// The table's entries for each family (algorithm_table.cc): a call's schedule, its modelled time
// in microseconds, where the planner may pick it on its own, and its most peers per step.
// ring.cc
std::vector<int> ringOrderOf(const PlanContext& ctx);  // host order, or rank order on one host
Schedule buildRing(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx);
double modelRing(const CollCall& call, const PlanContext& ctx);
Schedule buildChain(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx);
double modelChain(const CollCall& call, const PlanContext& ctx);
bool chainEligible(const CollCall& call, const PlanContext& ctx);
// tree.cc
Schedule buildTree(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx);
double modelTree(const CollCall& call, const PlanContext& ctx);
bool treeEligible(const CollCall& call, const PlanContext& ctx);
int treePeersPerStep(const PlanContext& ctx);
// direct.cc
Schedule buildDirect(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx);
double modelDirect(const CollCall& call, const PlanContext& ctx);
Schedule buildPairwise(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx);
double modelPairwise(const CollCall& call, const PlanContext& ctx);
// bruck.cc
Schedule buildBruck(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx);
double modelBruck(const CollCall& call, const PlanContext& ctx);
// exchange.cc
Schedule buildExchange(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx);
double modelExchange(const CollCall& call, const PlanContext& ctx);
bool exchangeCanRun(const CollCall& call, const PlanContext& ctx, std::string* why);
bool exchangeEligible(const CollCall& call, const PlanContext& ctx);
int exchangePeersPerStep(const PlanContext& ctx);
// hierarchy.cc
Schedule buildHier(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx);
double modelHier(const CollCall& call, const PlanContext& ctx);
int hierPeersPerStep(const PlanContext& ctx);
Schedule buildDoubleTree(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx);
double modelDoubleTree(const CollCall& call, const PlanContext& ctx);

// Binomial tree shape rooted at `root`: the parent of `rank` (-1 for the root) and its children.
int binomialParent(int nranks, int rank, int root);
int binomialChildren(int nranks, int rank, int root, int* children, int maxChildren);
// How many levels of the binomial tree rooted at rank 0 (edges rank v - v+2^k) have an edge
// between two hosts: the tree's cost model charges those the network.
int binomialLevelsCrossingHosts(const HostLayout& hosts, int nranks);

}  // namespace algorithms
}  // namespace coll
