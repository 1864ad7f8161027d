// Algorithms that know the hosts: a two-level all-reduce built from the single-level schedules
// (run on sub-groups of ranks and renumbered), and double binary trees over the host-ordered
// ring. Like every builder they are pure functions of their arguments.
#include <algorithm>

#include "src/algorithms/algorithms.h"
#include "src/algorithms/cost_model.h"

namespace coll {
namespace algorithms {
namespace {

// Appends a schedule built for a sub-group (ranks 0..m-1 of the group) to `out`, renaming its
// peers to the members' real ranks. With sourceFromRecv, the sub-schedule's reads of the send
// buffer read the receive buffer instead: later phases work on the partial result held there.
void appendMapped(Schedule& out, const Schedule& in, const std::vector<int>& members, bool sourceFromRecv) {
  for (Step step : in.steps) {
    for (int i = 0; i < step.nrecv; ++i) step.recvPeers[i] = members[step.recvPeers[i]];
    for (int i = 0; i < step.nsend; ++i) step.sendPeers[i] = members[step.sendPeers[i]];
    if (sourceFromRecv && step.src.buffer == BufferId::kSend) step.src.buffer = BufferId::kRecv;
    out.steps.push_back(step);
  }
}

// A balanced binary tree over indices [lo, hi] in in-order layout: the middle index is the root
// of the range. Fills parent[] (-1 for the root) for every index of the range.
void buildInOrderTree(int lo, int hi, int parentIndex, std::vector<int>& parent) {
  if (lo > hi) return;
  int mid = lo + (hi - lo) / 2;
  parent[mid] = parentIndex;
  buildInOrderTree(lo, mid - 1, mid, parent);
  buildInOrderTree(mid + 1, hi, mid, parent);
}

// One of the two trees in ring positions: tree t gives the shape's index (p + t) mod n to the
// rank at position p, so the second tree is the first shifted by one position and the inner
// nodes of one are mostly leaves of the other.
struct TreeLinks {
  int parent = -1;
  int children[2] = {-1, -1};
  int nchildren = 0;
};
TreeLinks linksOf(const std::vector<int>& shapeParent, const std::vector<int>& order, int position, int shift) {
  int n = static_cast<int>(order.size());
  auto toPosition = [&](int index) { return (index - shift + n) % n; };
  int index = (position + shift) % n;
  TreeLinks links;
  if (shapeParent[index] >= 0) links.parent = order[toPosition(shapeParent[index])];
  for (int i = 0; i < n; ++i)
    if (shapeParent[i] == index) links.children[links.nchildren++] = order[toPosition(i)];
  return links;
}

// Removes steps that only read (a root with nobody to send to), keeping joined runs joined.
void dropIdleSteps(Schedule& s) {
  std::vector<Step> kept;
  for (const Step& step : s.steps) {
    bool idle = step.dst.buffer == BufferId::kNone && step.nsend == 0 && step.nrecv == 0;
    if (!idle) {
      kept.push_back(step);
    } else if (!kept.empty() && kept.back().joinNext) {
      kept.back().joinNext = step.joinNext;
    }
  }
  s.steps = std::move(kept);
}

}  // namespace

HostLayout singleHostLayout(int nranks) { return HostLayout{identityOrder(nranks)}; }

std::vector<int> hostOrderedRing(const HostLayout& hosts) {
  std::vector<int> order;
  for (const auto& host : hosts) order.insert(order.end(), host.begin(), host.end());
  return order;
}

std::vector<int> hostIndexOfRanks(const HostLayout& hosts, int nranks) {
  std::vector<int> hostOf(nranks, 0);
  for (size_t h = 0; h < hosts.size(); ++h)
    for (int r : hosts[h]) hostOf[r] = static_cast<int>(h);
  return hostOf;
}

void describeHostLayout(PlanContext& ctx, const HostLayout& hosts) {
  ctx.hosts = hosts;
  ctx.crossesNetwork = hosts.size() > 1;
  ctx.ringOrder = hostOrderedRing(hosts);
  ctx.treeNetLevels = binomialLevelsCrossingHosts(hosts, ctx.nranks);
}

Schedule hierarchicalAllReduce(const HostLayout& hosts, int rank, size_t count, size_t maxStepElems, bool avg) {
  Schedule s;
  s.algorithm = "hier";
  std::vector<int> leaders;
  int myHost = -1;
  for (size_t h = 0; h < hosts.size(); ++h) {
    leaders.push_back(hosts[h].front());
    if (indexOf(hosts[h], rank) >= 0) myHost = static_cast<int>(h);
  }
  const std::vector<int>& local = hosts[myHost];
  int localIndex = indexOf(local, rank);
  int nlocal = static_cast<int>(local.size());
  int nhosts = static_cast<int>(hosts.size());
  // The average divides the full sum once: in the leaders' ring, or at the only leader.
  appendMapped(s, treeReduce(nlocal, localIndex, 0, count, maxStepElems, avg && nhosts == 1), local, false);
  if (localIndex == 0 && nhosts > 1)
    appendMapped(s, ringAllReduce(nhosts, myHost, count, maxStepElems, avg), leaders, true);
  appendMapped(s, treeBroadcast(nlocal, localIndex, 0, count, maxStepElems), local, true);
  // The broadcast's root would copy the receive buffer onto itself; it only needs to send.
  for (Step& step : s.steps)
    if (step.src.buffer == BufferId::kRecv && step.dst.buffer == BufferId::kRecv &&
        step.src.offset == step.dst.offset && step.nrecv == 0)
      step.dst = BufferRef{};
  dropIdleSteps(s);
  return s;
}

Schedule doubleTreeAllReduce(const std::vector<int>& order, int rank, size_t count, size_t maxStepElems, bool avg) {
  Schedule s;
  s.algorithm = "dbtree";
  int n = static_cast<int>(order.size());
  int position = indexOf(order, rank);
  std::vector<int> shapeParent(n, -1);
  buildInOrderTree(0, n - 1, -1, shapeParent);
  TreeLinks trees[2] = {linksOf(shapeParent, order, position, 0), linksOf(shapeParent, order, position, n > 1 ? 1 : 0)};
  size_t half[2] = {count / 2, count - count / 2};
  size_t start[2] = {0, count / 2};
  size_t chunk = std::max<size_t>(1, maxStepElems);
  size_t chunks = (std::max(half[0], half[1]) + chunk - 1) / chunk;
  auto piece = [&](int t, size_t c) {
    size_t begin = std::min(half[t], c * chunk);
    return std::make_pair(start[t] + begin, std::min(half[t], begin + chunk) - begin);
  };
  // Reduce towards both roots, one chunk of each half at a time, the two trees together.
  for (size_t c = 0; c < chunks; ++c) {
    for (int t = 0; t < 2; ++t) {
      auto [offset, length] = piece(t, c);
      Step& step = s.add(length);
      for (int i = 0; i < trees[t].nchildren; ++i) step.recvFrom(trees[t].children[i]);
      step.src = sendAt(offset);
      if (trees[t].parent < 0) {
        step.dst = recvAt(offset);
        step.finalAvg = avg;
      } else {
        step.sendTo(trees[t].parent);
      }
      step.joinNext = t == 0;
    }
  }
  // Then broadcast the results back down both trees.
  for (size_t c = 0; c < chunks; ++c) {
    for (int t = 0; t < 2; ++t) {
      auto [offset, length] = piece(t, c);
      Step& step = s.add(length);
      if (trees[t].parent < 0) {
        step.src = recvAt(offset);
      } else {
        step.recvFrom(trees[t].parent);
        step.dst = recvAt(offset);
      }
      for (int i = 0; i < trees[t].nchildren; ++i) step.sendTo(trees[t].children[i]);
      step.joinNext = t == 0;
    }
  }
  dropIdleSteps(s);
  return s;
}

Schedule buildHier(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx) {
  return hierarchicalAllReduce(ctx.hosts.empty() ? singleHostLayout(ctx.nranks) : ctx.hosts, rank, call.count,
                               plan.maxStepElems, call.op == collAvg);
}

double modelHier(const CollCall& call, const PlanContext& ctx) {
  const double size = static_cast<double>(callBytes(call));
  const int nhosts = ctx.hosts.empty() ? 1 : static_cast<int>(ctx.hosts.size());
  int widest = 1;
  for (const auto& host : ctx.hosts) widest = std::max(widest, static_cast<int>(host.size()));
  const LinkCost& slowest = slowestLink(ctx);
  // Three phases one after the other: a shared-memory reduce, the leaders' ring, a shared-memory
  // broadcast; each phase boundary costs one more synchronisation.
  double local = 2.0 * ceilLog2(widest) * ctx.localLink.latencyUs + 2.0 * size / ctx.localLink.bytesPerUs;
  double across =
      nhosts <= 1 ? 0
                  : 2.0 * (nhosts - 1) * slowest.latencyUs + 2.0 * (nhosts - 1) / nhosts * size / slowest.bytesPerUs;
  return (widest > 1 ? local + 2.0 * ctx.localLink.latencyUs : 0) + across;
}

int hierPeersPerStep(const PlanContext& ctx) {
  int widest = ctx.hosts.empty() ? ctx.nranks : 1;
  for (const auto& host : ctx.hosts) widest = std::max(widest, static_cast<int>(host.size()));
  return std::max(1, ceilLog2(widest));
}

Schedule buildDoubleTree(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx) {
  return doubleTreeAllReduce(ringOrderOf(ctx), rank, call.count, plan.maxStepElems, call.op == collAvg);
}

double modelDoubleTree(const CollCall& call, const PlanContext& ctx) {
  if (ctx.nranks <= 1) return 0;
  // A balanced binary tree's depth, up then down; each half crosses a link about once each way,
  // the two trees side by side.
  const LinkCost& slowest = slowestLink(ctx);
  return 2.0 * ceilLog2(ctx.nranks + 1) * slowest.latencyUs +
         2.0 * static_cast<double>(callBytes(call)) / slowest.bytesPerUs;
}

}  // namespace algorithms
}  // namespace coll
