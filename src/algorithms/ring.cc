// Rings: every rank receives from rank-1 and sends to rank+1, so each link carries the same bytes
// and the busiest link moves 2(n-1)/n of the data for all-reduce: the bandwidth optimum.
//
// The data is cut into loops of at most n * maxStepElems elements; each loop is split into n
// blocks. Reduce-scatter moves block (r-1-k) at step k and rank r finishes with block r; the
// all-gather then circulates the finished blocks. Within a loop every step moves one block at
// most, and maxStepElems is below a FIFO's capacity: the sum over the ring of (sent - received)
// can then never reach n FIFOs' worth, so the cycle of waits cannot deadlock.
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "src/algorithms/algorithms.h"
#include "src/algorithms/cost_model.h"

namespace coll {
namespace algorithms {
namespace {

int wrap(int value, int n) { return ((value % n) + n) % n; }

// Block b of a loop of `length` elements: [begin, begin+count) relative to the loop start. Every
// rank computes the same split from the same numbers, so step counts match on both ends.
struct Block {
  size_t begin;
  size_t count;
};
Block blockOf(size_t length, int nranks, int b) {
  size_t per = (length + nranks - 1) / nranks;
  size_t begin = std::min(length, per * static_cast<size_t>(b));
  size_t end = std::min(length, begin + per);
  return {begin, end - begin};
}

// Where block b of the current loop lives in the send and receive buffers.
struct BlockPlacement {
  size_t sendOffset;
  size_t recvOffset;
  size_t count;
};

// Reduce-scatter steps of one loop. placement(b) gives block b; on the last step rank r owns the
// reduced block r and writes it to recvbuff (and forwards it when allGatherAfter).
// Positions on the ring are 0..n-1; `ring` gives the rank at each (rings ordered host by host
// cross the network once per host). r is this rank's position; blocks are numbered by position.
struct RingView {
  const std::vector<int>& order;
  int n, r;
  int prev() const { return order[wrap(r - 1, n)]; }
  int next() const { return order[wrap(r + 1, n)]; }
};

template <typename PlacementFn>
void appendReduceScatterLoop(Schedule& s, const RingView& ring, PlacementFn placement, bool avg, bool allGatherAfter) {
  int n = ring.n, r = ring.r, prev = ring.prev(), next = ring.next();
  BlockPlacement first = placement(wrap(r - 1, n));
  Step& step0 = s.add(first.count);
  step0.src = sendAt(first.sendOffset);
  step0.sendTo(next);
  for (int k = 1; k < n - 1; ++k) {
    BlockPlacement p = placement(wrap(r - 1 - k, n));
    Step& step = s.add(p.count);
    step.src = sendAt(p.sendOffset);
    step.recvFrom(prev).sendTo(next);
  }
  BlockPlacement mine = placement(r);
  Step& last = s.add(mine.count);
  last.src = sendAt(mine.sendOffset);
  last.dst = recvAt(mine.recvOffset);
  last.finalAvg = avg;
  last.recvFrom(prev);
  if (allGatherAfter) last.sendTo(next);
}

// All-gather steps of one loop after rank r's own block went out (by the reduce-scatter's last
// step, or by an explicit first step for a plain all-gather).
template <typename PlacementFn>
void appendAllGatherTail(Schedule& s, const RingView& ring, PlacementFn placement) {
  int n = ring.n, r = ring.r, prev = ring.prev(), next = ring.next();
  for (int j = 1; j < n; ++j) {
    BlockPlacement p = placement(wrap(r - j, n));
    Step& step = s.add(p.count);
    step.dst = recvAt(p.recvOffset);
    step.recvFrom(prev);
    if (j < n - 1) step.sendTo(next);
  }
}

// Loops of a 2-rank all-gather that share a batch.
constexpr size_t kAllGatherLoopsPerBatch = 8;

// Between 2 ranks, joins each loop's two steps (the own block out, the peer's block in) and up to
// kAllGatherLoopsPerBatch loops into one batch, as Bruck's rounds are (bruck.cc): nothing is
// forwarded, so receives never wait on sends. The receive is then posted, and its landing
// offered, while the own block goes out. As separate steps the rank received only after sending,
// and over sockets the peer's frames arrived meanwhile and were copied out of slots instead of
// landing in place: a 1 MiB all-gather took longer than the all-to-all that moves the same bytes.
// On more ranks the steps stay apart: joining the own block with the first receive measured slower
// at 4 ranks on shared memory (docs/performance.md, "Choices in the code, and the measurement
// behind each").
// Called after each loop is appended: the loop is the last two steps.
void joinTwoRankAllGatherLoop(Schedule& s) {
  const size_t loops = s.steps.size() / 2;
  Step* loop = &s.steps[s.steps.size() - 2];
  loop[0].joinNext = true;
  loop[1].joinNext = loops % kAllGatherLoopsPerBatch != 0;
}

// One all-gather loop: this rank's own block goes into its own place and out to the next rank,
// then the others' blocks circulate.
template <typename PlacementFn>
void appendAllGatherLoop(Schedule& s, const RingView& ring, PlacementFn placement) {
  BlockPlacement own = placement(ring.r);
  Step& first = s.add(own.count);
  first.src = sendAt(own.sendOffset);
  first.dst = recvAt(own.recvOffset);
  if (ring.n == 1) return;
  first.sendTo(ring.next());
  appendAllGatherTail(s, ring, placement);
  if (ring.n == 2) joinTwoRankAllGatherLoop(s);
}

Schedule localCopy(size_t count, const char* name) {
  Schedule s;
  s.algorithm = name;
  Step& step = s.add(count);
  step.src = sendAt(0);
  step.dst = recvAt(0);
  return s;
}

size_t loopElems(int nranks, size_t maxStepElems) { return std::max<size_t>(1, maxStepElems) * nranks; }

}  // namespace

std::vector<int> identityOrder(int n) {
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  return order;
}

int indexOf(const std::vector<int>& list, int value) {
  auto it = std::find(list.begin(), list.end(), value);
  return it == list.end() ? -1 : static_cast<int>(it - list.begin());
}

Schedule ringAllReduce(int n, int r, size_t count, size_t maxStepElems, bool avg) {
  return ringAllReduce(identityOrder(n), r, count, maxStepElems, avg);
}

Schedule ringReduceScatter(int n, int r, size_t recvCount, size_t maxStepElems, bool avg) {
  return ringReduceScatter(identityOrder(n), r, recvCount, maxStepElems, avg);
}

Schedule ringAllGather(int n, int r, size_t sendCount, size_t maxStepElems) {
  return ringAllGather(identityOrder(n), r, sendCount, maxStepElems);
}

Schedule ringAllReduce(const std::vector<int>& order, int rank, size_t count, size_t maxStepElems, bool avg) {
  Schedule s;
  s.algorithm = "ring";
  int n = static_cast<int>(order.size());
  if (n == 1) return localCopy(count, "ring");
  RingView ring{order, n, indexOf(order, rank)};
  size_t loop = loopElems(n, maxStepElems);
  for (size_t base = 0; base < count; base += loop) {
    size_t length = std::min(loop, count - base);
    auto placement = [&](int b) {
      Block blk = blockOf(length, n, b);
      return BlockPlacement{base + blk.begin, base + blk.begin, blk.count};
    };
    appendReduceScatterLoop(s, ring, placement, avg, /*allGatherAfter=*/true);
    appendAllGatherTail(s, ring, placement);
  }
  return s;
}

Schedule ringReduceScatter(const std::vector<int>& order, int rank, size_t recvCount, size_t maxStepElems, bool avg) {
  Schedule s;
  s.algorithm = "ring";
  int n = static_cast<int>(order.size());
  if (n == 1) return localCopy(recvCount, "ring");
  RingView ring{order, n, indexOf(order, rank)};
  // The block at position b is rank order[b]'s share of recvCount elements; a loop takes
  // maxStepElems of each.
  size_t chunk = std::max<size_t>(1, maxStepElems);
  for (size_t base = 0; base < recvCount; base += chunk) {
    size_t length = std::min(chunk, recvCount - base);
    auto placement = [&](int b) {
      return BlockPlacement{static_cast<size_t>(order[b]) * recvCount + base, base, length};
    };
    appendReduceScatterLoop(s, ring, placement, avg, /*allGatherAfter=*/false);
  }
  return s;
}

Schedule ringAllGather(const std::vector<int>& order, int rank, size_t sendCount, size_t maxStepElems) {
  Schedule s;
  s.algorithm = "ring";
  int n = static_cast<int>(order.size());
  RingView ring{order, n, indexOf(order, rank)};
  size_t chunk = std::max<size_t>(1, maxStepElems);
  for (size_t base = 0; base < sendCount; base += chunk) {
    size_t length = std::min(chunk, sendCount - base);
    auto placement = [&](int b) {
      return BlockPlacement{base, static_cast<size_t>(order[b]) * sendCount + base, length};
    };
    appendAllGatherLoop(s, ring, placement);
  }
  if (!s.steps.empty()) s.steps.back().joinNext = false;
  return s;
}

Schedule ringReduceScatterV(const std::vector<int>& order, int rank, const size_t* counts, size_t maxStepElems,
                            bool avg) {
  int n = static_cast<int>(order.size());
  if (n == 1) return localCopy(counts[0], "ring");
  Schedule s;
  s.algorithm = "ring";
  RingView ring{order, n, indexOf(order, rank)};
  std::vector<size_t> offsets(n, 0);  // where each rank's block starts in the send buffer
  for (int p = 1; p < n; ++p) offsets[p] = offsets[p - 1] + counts[p - 1];
  // Loops of at most maxStepElems of every block, as ringAllGatherV's.
  size_t chunk = std::max<size_t>(1, maxStepElems);
  size_t longest = *std::max_element(counts, counts + n);
  for (size_t base = 0; base < longest; base += chunk) {
    auto placement = [&](int b) {
      const int of = order[b];
      return BlockPlacement{offsets[of] + base, base, counts[of] > base ? std::min(chunk, counts[of] - base) : 0};
    };
    appendReduceScatterLoop(s, ring, placement, avg, /*allGatherAfter=*/false);
  }
  return s;
}

Schedule ringAllGatherV(const std::vector<int>& order, int rank, const size_t* counts, const size_t* displs,
                        size_t maxStepElems) {
  Schedule s;
  s.algorithm = "ring";
  int n = static_cast<int>(order.size());
  RingView ring{order, n, indexOf(order, rank)};
  // A loop takes up to maxStepElems of every rank's block, so no step outgrows a FIFO however
  // uneven the blocks (the ring's deadlock argument, above); a block that has run out gives
  // zero-count steps, which every rank skips alike since every rank has the same counts.
  size_t chunk = std::max<size_t>(1, maxStepElems);
  size_t longest = 0;
  for (int p = 0; p < n; ++p) longest = std::max(longest, counts[p]);
  auto pieceOf = [&](int of, size_t base) { return counts[of] > base ? std::min(chunk, counts[of] - base) : 0; };
  for (size_t base = 0; base < longest; base += chunk) {
    auto placement = [&](int b) {
      const int of = order[b];
      return BlockPlacement{base, displs[of] + base, pieceOf(of, base)};
    };
    appendAllGatherLoop(s, ring, placement);
  }
  if (!s.steps.empty()) s.steps.back().joinNext = false;
  return s;
}

Schedule chainBroadcast(int n, int r, int root, size_t count, size_t maxStepElems) {
  Schedule s;
  s.algorithm = "chain";
  int position = wrap(r - root, n);
  int next = wrap(r + 1, n), prev = wrap(r - 1, n);
  size_t chunk = std::max<size_t>(1, maxStepElems);
  for (size_t base = 0; base < count; base += chunk) {
    size_t length = std::min(chunk, count - base);
    Step& step = s.add(length);
    if (position == 0) {
      step.src = sendAt(base);
    } else {
      step.recvFrom(prev);
    }
    step.dst = recvAt(base);
    if (position < n - 1) step.sendTo(next);
  }
  return s;
}

std::vector<int> ringOrderOf(const PlanContext& ctx) {
  return ctx.ringOrder.empty() ? identityOrder(ctx.nranks) : ctx.ringOrder;
}

Schedule buildRing(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx) {
  std::vector<int> order = ringOrderOf(ctx);
  bool avg = call.op == collAvg;
  switch (call.type) {
    case CollType::kAllReduce:
      return ringAllReduce(order, rank, call.count, plan.maxStepElems, avg);
    case CollType::kReduceScatter:
      return ringReduceScatter(order, rank, call.count, plan.maxStepElems, avg);
    case CollType::kAllGather:
      return ringAllGather(order, rank, call.count, plan.maxStepElems);
    case CollType::kAllGatherV:
      return ringAllGatherV(order, rank, call.counts->recvcounts, call.counts->rdispls, plan.maxStepElems);
    case CollType::kReduceScatterV:
      return ringReduceScatterV(order, rank, call.counts->recvcounts, plan.maxStepElems, avg);
    default:
      throwError(collInternalError, "ring: no schedule for %s", collTypeName(call.type));
  }
}

double modelRing(const CollCall& call, const PlanContext& ctx) {
  const int n = ctx.nranks;
  if (n <= 1) return 0;
  // In lock step, so the slowest link sets the pace of every step.
  const LinkCost& link = slowestLink(ctx);
  const double bytes = static_cast<double>(callBytes(call));
  if (call.type == CollType::kAllReduce)
    return 2.0 * (n - 1) * link.latencyUs + 2.0 * (n - 1) / n * bytes / link.bytesPerUs;
  // Reduce-scatter and all-gather: n-1 steps of one block each (the call's count is a block).
  return (n - 1) * (link.latencyUs + bytes / link.bytesPerUs);
}

Schedule buildChain(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx) {
  return chainBroadcast(ctx.nranks, rank, call.root, call.count, plan.maxStepElems);
}

double modelChain(const CollCall& call, const PlanContext& ctx) {
  // A pipeline of n-1 hops: the first chunk crosses them all, the others follow one step apart.
  const LinkCost& link = slowestLink(ctx);
  const double bytes = static_cast<double>(callBytes(call));
  const double chunk = std::max(1.0, std::min(bytes, static_cast<double>(stepBytes(ctx))));
  const double chunks = std::max(1.0, std::ceil(bytes / chunk));
  return (ctx.nranks - 1 + chunks - 1) * (link.latencyUs + chunk / link.bytesPerUs);
}

bool chainEligible(const CollCall& call, const PlanContext& ctx) {
  // Measured on one host: the chain wins on up to 3 ranks, and from 1 MiB on any number; the
  // binomial tree in between (docs/performance.md).
  return ctx.nranks <= 3 || callBytes(call) >= (1u << 20);
}

}  // namespace algorithms
}  // namespace coll
