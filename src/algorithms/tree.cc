// Binomial trees: log2(n) rounds from or to a root, the latency optimum for rooted collectives
// and small all-reduces. Ranks are renumbered so the root is virtual rank 0; the parent of virtual
// rank v clears its lowest set bit, and its children add each smaller power of two. A step
// receives from (or sends to) all children at once, so a node reduces its children's slices and
// its own input in one pass.
#include <algorithm>

#include "common/error.h"
#include "src/algorithms/algorithms.h"
#include "src/algorithms/cost_model.h"

namespace coll {
namespace algorithms {
namespace {

int toVirtual(int rank, int root, int n) { return (rank - root + n) % n; }
int toReal(int vrank, int root, int n) { return (vrank + root) % n; }

void appendBroadcast(Schedule& s, int n, int r, int root, size_t count, size_t chunk, BufferRef source) {
  int parent = binomialParent(n, r, root);
  int children[kMaxStepPeers];
  int nchildren = binomialChildren(n, r, root, children, kMaxStepPeers);
  for (size_t base = 0; base < count; base += chunk) {
    Step& step = s.add(std::min(chunk, count - base));
    if (parent < 0) {
      step.src = {source.buffer, source.offset + base};
    } else {
      step.recvFrom(parent);
    }
    step.dst = recvAt(base);
    for (int c = 0; c < nchildren; ++c) step.sendTo(children[c]);
  }
}

void appendReduce(Schedule& s, int n, int r, int root, size_t count, size_t chunk, bool avg) {
  int parent = binomialParent(n, r, root);
  int children[kMaxStepPeers];
  int nchildren = binomialChildren(n, r, root, children, kMaxStepPeers);
  for (size_t base = 0; base < count; base += chunk) {
    Step& step = s.add(std::min(chunk, count - base));
    for (int c = 0; c < nchildren; ++c) step.recvFrom(children[c]);
    step.src = sendAt(base);
    if (parent < 0) {
      step.dst = recvAt(base);
      step.finalAvg = avg;
    } else {
      step.sendTo(parent);
    }
  }
}

}  // namespace

int binomialParent(int n, int rank, int root) {
  int v = toVirtual(rank, root, n);
  if (v == 0) return -1;
  return toReal(v & (v - 1), root, n);
}

int binomialChildren(int n, int rank, int root, int* children, int maxChildren) {
  int v = toVirtual(rank, root, n);
  // The root may adopt every power of two; others only those below their lowest set bit.
  int limit = v == 0 ? n : (v & -v);
  int count = 0;
  for (int bit = 1; bit < limit && v + bit < n && count < maxChildren; bit <<= 1)
    children[count++] = toReal(v + bit, root, n);
  return count;
}

int binomialLevelsCrossingHosts(const HostLayout& hosts, int n) {
  const std::vector<int> hostOf = hostIndexOfRanks(hosts, n);
  int levels = 0;
  for (int bit = 1; bit < n; bit <<= 1) {
    bool crosses = false;
    for (int v = 0; v + bit < n && !crosses; v += 2 * bit) crosses = hostOf[v] != hostOf[v + bit];
    levels += crosses ? 1 : 0;
  }
  return levels;
}

Schedule treeBroadcast(int n, int r, int root, size_t count, size_t maxStepElems) {
  Schedule s;
  s.algorithm = "tree";
  appendBroadcast(s, n, r, root, count, std::max<size_t>(1, maxStepElems), sendAt(0));
  return s;
}

Schedule treeReduce(int n, int r, int root, size_t count, size_t maxStepElems, bool avg) {
  Schedule s;
  s.algorithm = "tree";
  appendReduce(s, n, r, root, count, std::max<size_t>(1, maxStepElems), avg);
  return s;
}

Schedule treeAllReduce(int n, int r, size_t count, size_t maxStepElems, bool avg) {
  // Reduce to rank 0, then broadcast the result from rank 0's receive buffer. The phases run one
  // after the other, so the dependency graph has no cycle whatever the chunk size.
  Schedule s;
  s.algorithm = "tree";
  size_t chunk = std::max<size_t>(1, maxStepElems);
  appendReduce(s, n, r, 0, count, chunk, avg);
  appendBroadcast(s, n, r, 0, count, chunk, recvAt(0));
  return s;
}

Schedule buildTree(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx) {
  const int n = ctx.nranks;
  const bool avg = call.op == collAvg;
  switch (call.type) {
    case CollType::kAllReduce:
      return treeAllReduce(n, rank, call.count, plan.maxStepElems, avg);
    case CollType::kBroadcast:
      return treeBroadcast(n, rank, call.root, call.count, plan.maxStepElems);
    case CollType::kReduce:
      return treeReduce(n, rank, call.root, call.count, plan.maxStepElems, avg);
    case CollType::kBarrier:
      return treeAllReduce(n, rank, 1, plan.maxStepElems, false);  // one byte up to the root and back
    default:
      throwError(collInternalError, "tree: no schedule for %s", collTypeName(call.type));
  }
}

double modelTree(const CollCall& call, const PlanContext& ctx) {
  const int n = ctx.nranks;
  if (n <= 1) return 0;
  // The root takes every level's data in turn; only the levels whose edges cross hosts pay the
  // network (treeNetLevels), the others shared memory.
  const int levels = ceilLog2(n);
  const int netLevels = ctx.crossesNetwork ? std::min(levels, std::max(1, ctx.treeNetLevels)) : 0;
  const double bytes = call.type == CollType::kBarrier ? 1.0 : static_cast<double>(callBytes(call));
  const double perLevelLocal = ctx.localLink.latencyUs + bytes / ctx.localLink.bytesPerUs;
  const double perLevelNet = ctx.networkLink.latencyUs + bytes / ctx.networkLink.bytesPerUs;
  const double oneWay = (levels - netLevels) * perLevelLocal + netLevels * perLevelNet;
  const bool upAndDown = call.type == CollType::kAllReduce || call.type == CollType::kBarrier;
  return upAndDown ? 2.0 * oneWay : oneWay;
}

bool treeEligible(const CollCall& call, const PlanContext& ctx) {
  switch (call.type) {
    case CollType::kAllReduce:
      return ctx.crossesNetwork;  // on one host the ring (or the one-shot path) is measured faster
    case CollType::kBroadcast:
      return !chainEligible(call, ctx);
    default:
      return true;
  }
}

int treePeersPerStep(const PlanContext& ctx) { return std::max(1, ceilLog2(ctx.nranks)); }

}  // namespace algorithms
}  // namespace coll
