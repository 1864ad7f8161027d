// Direct exchanges: every transfer goes straight between the two ranks that own the data, and all
// of a rank's transfers progress together (joinNext). Nothing waits in a cycle, so any size is
// safe; on one host, where links do not contend, this is also the fastest shape for gather,
// scatter and all-to-all.
#include "common/error.h"
#include "src/algorithms/algorithms.h"
#include "src/algorithms/cost_model.h"
#include "src/call_tag.h"

namespace coll {
namespace algorithms {
namespace {

// Marks every step but the last to progress together with its successor.
void joinAll(Schedule& s) {
  for (size_t i = 0; i + 1 < s.steps.size(); ++i) s.steps[i].joinNext = true;
}

}  // namespace

Schedule directGather(int n, int r, int root, size_t sendCount) {
  Schedule s;
  s.algorithm = "direct";
  if (r == root) {
    Step& own = s.add(sendCount);
    own.src = sendAt(0);
    own.dst = recvAt(static_cast<size_t>(root) * sendCount);
    for (int p = 0; p < n; ++p) {
      if (p == root) continue;
      Step& step = s.add(sendCount);
      step.recvFrom(p);
      step.dst = recvAt(static_cast<size_t>(p) * sendCount);
    }
    joinAll(s);
  } else {
    Step& step = s.add(sendCount);
    step.src = sendAt(0);
    step.sendTo(root);
  }
  return s;
}

Schedule directScatter(int n, int r, int root, size_t recvCount) {
  Schedule s;
  s.algorithm = "direct";
  if (r == root) {
    Step& own = s.add(recvCount);
    own.src = sendAt(static_cast<size_t>(root) * recvCount);
    own.dst = recvAt(0);
    for (int p = 0; p < n; ++p) {
      if (p == root) continue;
      Step& step = s.add(recvCount);
      step.src = sendAt(static_cast<size_t>(p) * recvCount);
      step.sendTo(p);
    }
    joinAll(s);
  } else {
    Step& step = s.add(recvCount);
    step.recvFrom(root);
    step.dst = recvAt(0);
  }
  return s;
}

Schedule pairwiseAllToAll(int n, int r, size_t count) {
  Schedule s;
  s.algorithm = "pairwise";
  // Offsets k = 1..n-1 pair rank r with r+k (send) and r-k (receive): at any moment each rank
  // feeds a different peer, so no receiver is flooded by everyone at once.
  for (int k = 1; k < n; ++k) {
    int to = (r + k) % n, from = (r - k + n) % n;
    Step& send = s.add(count);
    send.src = sendAt(static_cast<size_t>(to) * count);
    send.sendTo(to);
    Step& recv = s.add(count);
    recv.recvFrom(from);
    recv.dst = recvAt(static_cast<size_t>(from) * count);
  }
  // The copy of the own block last: the sends are on the wire and the receives have offered their
  // places in the output before it runs (measured faster over sockets; docs/performance.md,
  // "Choices in the code, and the measurement behind each").
  Step& own = s.add(count);
  own.src = sendAt(static_cast<size_t>(r) * count);
  own.dst = recvAt(static_cast<size_t>(r) * count);
  joinAll(s);
  return s;
}

Schedule pairwiseAllToAllV(int n, int r, const size_t* sendcounts, const size_t* sdispls, const size_t* recvcounts,
                           const size_t* rdispls, uint64_t callTag) {
  Schedule s;
  s.algorithm = "pairwise";
  // Each pair's messages carry their own count in the tag: a receiver that expects another count
  // than its peer sends fails on the tag, naming both, before a byte lands. (A pair where one
  // side expects nothing sends nothing, as zero-count steps do: the other side waits for its
  // deadline.) The planner keeps it while calls repeat its arrays and datatype (host_planner.h).
  s.steps.reserve(2 * static_cast<size_t>(n - 1) + 1);
  for (int k = 1; k < n; ++k) {
    int to = (r + k) % n, from = (r - k + n) % n;
    Step& send = s.add(sendcounts[to]);
    send.src = sendAt(sdispls[to]);
    send.sendTo(to);
    send.tag = callTag | sendcounts[to];
    Step& recv = s.add(recvcounts[from]);
    recv.recvFrom(from);
    recv.dst = recvAt(rdispls[from]);
    recv.tag = callTag | recvcounts[from];
  }
  Step& own = s.add(sendcounts[r]);
  own.src = sendAt(sdispls[r]);
  own.dst = recvAt(rdispls[r]);
  joinAll(s);
  return s;
}

Schedule buildDirect(const CollCall& call, const Plan&, int rank, const PlanContext& ctx) {
  if (call.type == CollType::kGather) return directGather(ctx.nranks, rank, call.root, call.count);
  if (call.type == CollType::kScatter) return directScatter(ctx.nranks, rank, call.root, call.count);
  throwError(collInternalError, "direct: no schedule for %s", collTypeName(call.type));
}

double modelDirect(const CollCall& call, const PlanContext& ctx) {
  // The root moves every other rank's block; all of them at once.
  const LinkCost& link = slowestLink(ctx);
  return link.latencyUs + (ctx.nranks - 1) * static_cast<double>(callBytes(call)) / link.bytesPerUs;
}

Schedule buildPairwise(const CollCall& call, const Plan&, int rank, const PlanContext& ctx) {
  if (call.type == CollType::kAllToAllV) {
    const VariableCounts& v = *call.counts;
    // The call's tag holds a count of 0 (validate_counts.h): each pair adds its own.
    return pairwiseAllToAllV(ctx.nranks, rank, v.sendcounts, v.sdispls, v.recvcounts, v.rdispls, collectiveTagOf(call));
  }
  return pairwiseAllToAll(ctx.nranks, rank, call.count);
}

double modelPairwise(const CollCall& call, const PlanContext& ctx) { return modelDirect(call, ctx); }

}  // namespace algorithms
}  // namespace coll
