// The algorithm families. Each builds the schedule of one rank; all are pure functions of their
// arguments. maxStepElems bounds the elements one step moves: the planner sets it below the
// transport FIFO's capacity so that ring steps, which wait on each other in a cycle, can never
// fill every FIFO at once (see ring.cc).
#pragma once

#include "src/algorithms/schedule.h"

namespace coll {
namespace algorithms {

// ring.cc: bandwidth-optimal pipelined rings.
Schedule ringAllReduce(int nranks, int rank, size_t count, size_t maxStepElems, bool avg);
Schedule ringReduceScatter(int nranks, int rank, size_t recvCount, size_t maxStepElems, bool avg);
Schedule ringAllGather(int nranks, int rank, size_t sendCount, size_t maxStepElems);
Schedule chainBroadcast(int nranks, int rank, int root, size_t count, size_t maxStepElems);

// tree.cc: binomial trees for rooted collectives and latency-bound all-reduce.
Schedule treeBroadcast(int nranks, int rank, int root, size_t count, size_t maxStepElems);
Schedule treeReduce(int nranks, int rank, int root, size_t count, size_t maxStepElems, bool avg);
Schedule treeAllReduce(int nranks, int rank, size_t count, size_t maxStepElems, bool avg);

// direct.cc: every rank talks straight to the others; all transfers progress together.
Schedule directGather(int nranks, int rank, int root, size_t sendCount);
Schedule directScatter(int nranks, int rank, int root, size_t recvCount);
Schedule pairwiseAllToAll(int nranks, int rank, size_t count);

// Binomial tree shape rooted at `root`: the parent of `rank` (-1 for the root) and its children.
int binomialParent(int nranks, int rank, int root);
int binomialChildren(int nranks, int rank, int root, int* children, int maxChildren);

}  // namespace algorithms
}  // namespace coll
