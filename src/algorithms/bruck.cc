// Bruck's all-gather: ceil(log2 n) rounds instead of the ring's n-1 steps, for the same bytes.
//
// Ranks stand at positions 0..n-1 of `order` (order[p] is the rank at position p, as for the
// rings), and blocks are named by position: block p is the input of rank order[p], and every
// rank keeps every block at its natural place in recvbuff (rank q's block at q * sendCount), so
// unlike the textbook algorithm there is no final rotation. After copying its own block, the rank
// at position p holds blocks [p, p+1) (positions mod n). At round k, with distance d = 2^k < n,
// it sends the blocks it holds, [p, p+c) with c = min(d, n-d), to position p-d, and receives
// [p+d, p+d+c) from position p+d, which held exactly those; it then holds [p, p+d+c), that is
// 2d blocks or all n. The last round (c = n-d < d when n is not a power of two) sends only what
// is missing, so every rank sends and receives (n-1) blocks in all, as in the ring.
//
// The receive range never overlaps the send range of the same round (c <= d and d + c <= n), so a
// round reads only blocks that earlier rounds finished, and each block is written once. Ranges
// of positions become pieces of recvbuff: a run of positions whose ranks are consecutive is one
// contiguous piece (with identity order, a range is one piece, or two where it wraps); in host
// order that is usually one block per piece. Pieces are cut into chunks of at most maxStepElems.
// Both ends compute the pieces and chunks of a transfer from the same positions and the same
// order, so the sender's steps and the receiver's steps match slice for slice.
//
// Why it cannot deadlock. Every directed connection carries data in one round only: p-2^j and
// p-2^k are different positions for 2^j < 2^k < n, since 0 < 2^k - 2^j < n. A rank's steps are a
// sequence of batches (round k, group g): its send chunks to p-d of group g (chunk indices
// [8g, 8g+8)) joined with its receive chunks from p+d of the same group, and the executor moves
// every step of a batch whenever it can, never blocking on one (on one connection, in order).
// The chunks p sends in round k are exactly the chunks p-d receives in round k, in the same
// order and groups. Take a stuck rank p at the earliest (k, g) of all unfinished ranks. It
// receives group g from p+d, which is at (k, g) or later: if later, those chunks were sent; if
// at (k, g), p+d is sending them into a FIFO that holds nothing else (p consumed the earlier
// groups, and no other round uses it). It sends group g to p-d, also at (k, g) or later: at
// (k, g) it is consuming exactly these chunks in order, so slots free as they fill; later would
// mean it already received them. Either way p moves, so no rank stays stuck, whatever the chunk
// size; maxStepElems (half a FIFO) only bounds the steps as for the other algorithms.
//
// In place (sendbuff == recvbuff + rank * sendCount) the first copy is an exact alias, and every
// later step reads recvbuff only.
//
// When it wins (measured on network-namespace hosts, docs/performance.md): a round costs about
// 1.3 ring steps, and there are ceil(log2 n) of them instead of n-1, so small and medium calls
// across hosts are faster. But from the second round on every rank of a host sends off-host at
// once, so with several ranks per host the host's link carries more than the ring's one block per
// step (5 blocks instead of 3 on 2 hosts x 2 ranks): large calls there are slower. The model
// counts both, and the planner considers it across hosts only; on one host the one-shot path and
// the ring are faster.
#include <algorithm>
#include <vector>

#include "src/algorithms/algorithms.h"
#include "src/algorithms/cost_model.h"

namespace coll {
namespace algorithms {
namespace {

// Chunk pairs per batch: 8 sends and 8 receives, a third of the device path's limit (48).
constexpr size_t kChunksPerBatch = 8;

int wrapPosition(long value, int n) { return static_cast<int>(((value % n) + n) % n); }

// A contiguous run of recvbuff: [offset, offset + count) in elements.
struct Piece {
  size_t offset;
  size_t count;
};

// The chunks of the blocks at positions [first, first + length) mod n: maximal runs of positions
// whose ranks are consecutive (contiguous in recvbuff), each cut into chunks of at most `chunk`.
std::vector<Piece> chunksOf(const std::vector<int>& order, int first, int length, size_t sendCount, size_t chunk) {
  int n = static_cast<int>(order.size());
  std::vector<Piece> runs;
  for (int i = 0; i < length; ++i) {
    int rank = order[wrapPosition(static_cast<long>(first) + i, n)];
    size_t offset = static_cast<size_t>(rank) * sendCount;
    if (!runs.empty() && runs.back().offset + runs.back().count == offset) {
      runs.back().count += sendCount;
    } else {
      runs.push_back({offset, sendCount});
    }
  }
  std::vector<Piece> chunks;
  for (const Piece& run : runs)
    for (size_t done = 0; done < run.count; done += chunk)
      chunks.push_back({run.offset + done, std::min(chunk, run.count - done)});
  return chunks;
}

}  // namespace

Schedule bruckAllGather(const std::vector<int>& order, int rank, size_t sendCount, size_t maxStepElems) {
  Schedule s;
  s.algorithm = "bruck";
  if (sendCount == 0) return s;
  int n = static_cast<int>(order.size());
  int p = indexOf(order, rank);
  Step& own = s.add(sendCount);
  own.src = sendAt(0);
  own.dst = recvAt(static_cast<size_t>(rank) * sendCount);
  size_t chunk = std::max<size_t>(1, maxStepElems);
  for (long d = 1; d < n; d *= 2) {
    int c = static_cast<int>(std::min<long>(d, n - d));
    int to = order[wrapPosition(p - d, n)];
    int from = order[wrapPosition(p + d, n)];
    std::vector<Piece> sends = chunksOf(order, p, c, sendCount, chunk);
    std::vector<Piece> recvs = chunksOf(order, wrapPosition(p + d, n), c, sendCount, chunk);
    // Chunks i out and i in, for the kChunksPerBatch indices of a group, form one batch: they
    // progress together (a send chunk joined to its receive chunk). Small calls move a round in
    // one batch even where a range wraps (two pieces), and no batch comes near the device path's
    // limit on transfers per batch. With host order the two lists may differ in length.
    size_t chunks = std::max(sends.size(), recvs.size());
    for (size_t group = 0; group < chunks; group += kChunksPerBatch) {
      size_t end = std::min(chunks, group + kChunksPerBatch);
      for (size_t i = group; i < end; ++i) {
        if (i < sends.size()) {
          Step& send = s.add(sends[i].count);
          send.src = recvAt(sends[i].offset);
          send.sendTo(to);
          send.joinNext = true;
        }
        if (i < recvs.size()) {
          Step& recv = s.add(recvs[i].count);
          recv.recvFrom(from);
          recv.dst = recvAt(recvs[i].offset);
          recv.joinNext = true;
        }
      }
      s.steps.back().joinNext = false;
    }
  }
  return s;
}

namespace {

// A Bruck round against a ring step, measured at 32 B across hosts: 1.15 to 1.4.
constexpr double kRoundInRingSteps = 1.3;

// The blocks the busiest host sends off-host, summed over the rounds: its ranks share its link.
// Equal to n-1 with one rank per host, more with several.
double offHostBlocks(const PlanContext& ctx, const std::vector<int>& order) {
  const int n = ctx.nranks;
  const std::vector<int> hostOf = hostIndexOfRanks(ctx.hosts, n);
  std::vector<double> sent(std::max<size_t>(1, ctx.hosts.size()));
  double total = 0;
  for (long d = 1; d < n; d *= 2) {
    const double c = static_cast<double>(std::min<long>(d, n - d));
    std::fill(sent.begin(), sent.end(), 0.0);
    for (int p = 0; p < n; ++p) {
      int from = hostOf[order[p]], to = hostOf[order[wrapPosition(p - d, n)]];
      if (from != to) sent[from] += c;
    }
    total += *std::max_element(sent.begin(), sent.end());
  }
  return total;
}

}  // namespace

Schedule buildBruck(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx) {
  return bruckAllGather(ringOrderOf(ctx), rank, call.count, plan.maxStepElems);
}

double modelBruck(const CollCall& call, const PlanContext& ctx) {
  const int n = ctx.nranks;
  if (n <= 1) return 0;
  const LinkCost& link = slowestLink(ctx);
  const double blocks = ctx.crossesNetwork ? offHostBlocks(ctx, ringOrderOf(ctx)) : n - 1;
  return kRoundInRingSteps * ceilLog2(n) * link.latencyUs + blocks * callBytes(call) / link.bytesPerUs;
}

}  // namespace algorithms
}  // namespace coll
