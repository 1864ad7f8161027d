// The exchange all-reduce: every rank sends its whole input to every other rank, then reduces all
// n inputs itself. One message latency instead of the tree's 2 log2(n) or the ring's 2(n-1), at
// the price of n-1 copies of the input leaving each rank: the latency optimum for small calls
// among a few ranks that do not share memory (over sockets, or across hosts), where the one-shot
// path cannot run. Open MPI's recursive doubling takes log2(n) exchanges for the same reason; with
// the few ranks this serves, one round of n-1 sends is shorter still.
//
// Two steps, one after the other: the sends, then one step that receives from every peer and
// reduces. The sends never wait for a peer (canRun keeps the input within half a FIFO, so every
// slot they need is free once the peer has finished the previous call), so no rank can wait in a
// cycle. The reduction takes the inputs in rank order on every rank (localSourceAt puts this
// rank's own input at its place), so every rank computes the same bits. In place, the second step
// writes the buffer the first sent from: it begins only after those sends have left it
// (afterSends; the socket transport sends straight from the caller's memory).
#include <string>

#include "common/error.h"
#include "src/algorithms/algorithms.h"
#include "src/algorithms/cost_model.h"

namespace coll {
namespace algorithms {
namespace {

// Beyond this many ranks the n-1 sends cost more than the tree's rounds save, and the
// connections grow with n: the planner does not consider it (COLL_ALGO still may force it).
constexpr int kMostExchangeRanks = 4;
// Each send beyond the first costs its sender a system call or a slot hand-off: a fraction of a
// whole hop's latency.
constexpr double kExtraSendInHops = 0.25;
// From this input size the ring is as fast or faster, though both move the same bytes between two
// ranks: its slices overlap the reduction with the transfer, and the exchange's whole-input
// messages do not. Measured over sockets, 2 ranks, each forced in rotating order: the exchange
// faster at 256 KiB, the ring from 512 KiB (docs/performance.md, "Defaults, and the measurement
// behind each").
constexpr size_t kExchangeLargestBytes = size_t{512} << 10;

}  // namespace

Schedule exchangeAllReduce(int nranks, int rank, size_t count, bool avg) {
  Schedule s;
  s.algorithm = "exchange";
  if (nranks == 1) {
    Step& own = s.add(count);
    own.src = sendAt(0);
    own.dst = recvAt(0);
    own.finalAvg = avg;
    return s;
  }
  Step& sends = s.add(count);
  sends.src = sendAt(0);
  for (int p = 0; p < nranks; ++p)
    if (p != rank) sends.sendTo(p);
  Step& reduce = s.add(count);
  for (int p = 0; p < nranks; ++p)
    if (p != rank) reduce.recvFrom(p);
  reduce.src = sendAt(0);
  reduce.localSourceAt = static_cast<int8_t>(rank);
  reduce.dst = recvAt(0);
  reduce.finalAvg = avg;
  reduce.afterSends = true;
  return s;
}

bool exchangeCanRun(const CollCall& call, const PlanContext& ctx, std::string* why) {
  std::string problem;
  if (ctx.deviceMemory) {
    problem = "exchange runs on host memory only";
  } else if (ctx.nranks - 1 > ctx.maxStepPeers) {
    problem = formatString("exchange sends to every other rank in one step: at most %d ranks, got %d",
                           ctx.maxStepPeers + 1, ctx.nranks);
  } else if (callBytes(call) > stepBytes(ctx)) {
    // Larger inputs would make the sends wait for peers that are sending too.
    problem = formatString("exchange takes inputs of at most %zu bytes (half a FIFO), got %zu", stepBytes(ctx),
                           callBytes(call));
  }
  if (problem.empty()) return true;
  if (why != nullptr) *why = problem;
  return false;
}

bool exchangeEligible(const CollCall& call, const PlanContext& ctx) {
  // On one host with shared memory the one-shot path does the same with one copy less.
  return ctx.crossesNetwork && ctx.nranks <= kMostExchangeRanks && callBytes(call) < kExchangeLargestBytes;
}

double modelExchange(const CollCall& call, const PlanContext& ctx) {
  const int n = ctx.nranks;
  if (n <= 1) return 0;
  // One message's latency and the extra sends; each rank's link carries n-1 copies of its input.
  // The reduction is not charged: it runs slice by slice as the inputs arrive, behind the link,
  // as the ring's does (whose model charges none either). Charging all n inputs made the ring win
  // from 40 KiB at 2 ranks, where measurement says otherwise: over sockets the exchange was the
  // faster at 256 KiB (docs/performance.md, "Defaults, and the measurement behind each").
  const LinkCost& link = slowestLink(ctx);
  const double bytes = static_cast<double>(callBytes(call));
  return link.latencyUs * (1 + kExtraSendInHops * (n - 2)) + (n - 1) * bytes / link.bytesPerUs;
}

Schedule buildExchange(const CollCall& call, const Plan&, int rank, const PlanContext& ctx) {
  return exchangeAllReduce(ctx.nranks, rank, call.count, call.op == collAvg);
}

int exchangePeersPerStep(const PlanContext& ctx) { return std::max(1, ctx.nranks - 1); }

}  // namespace algorithms
}  // namespace coll
