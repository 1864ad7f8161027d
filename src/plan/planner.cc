#include "src/plan/planner.h"

#include <algorithm>

#include "common/error.h"
#include "src/algorithms/algorithms.h"

namespace coll {
namespace {

// Cost model constants for shared memory on one host, from the measurements in
// docs/performance.md: a flag round trip between cores, a pipeline step, and the rate at which
// one core streams bytes through its caches.
constexpr double kOneshotLatencyUs = 0.5;
constexpr double kStepLatencyUs = 1.5;
constexpr double kCopyBytesPerUs = 10000.0;  // about 10 GB/s

// Bytes a rank moves through memory per byte of its input.
double oneshotTraffic(CollType type, int n) {
  switch (type) {
    case CollType::kAllReduce:
    case CollType::kReduce:
    case CollType::kAllGather:
    case CollType::kGather:
      return 2.0 + n;  // publish (read+write), then read every rank's copy
    default:
      return 3.0;
  }
}

double ringTraffic(CollType type, int n) {
  // Reduce-scatter then all-gather: per step a slot is written and read once more than the data.
  double fraction = static_cast<double>(n - 1) / n;
  return type == CollType::kAllReduce ? 2 * fraction * 3.0 : fraction * 3.0;
}

Algo defaultAlgo(CollType type, int nranks, size_t bytes) {
  switch (type) {
    case CollType::kAllReduce:
      return Algo::kRing;
    case CollType::kAllGather:
    case CollType::kReduceScatter:
      return Algo::kRing;
    case CollType::kBroadcast:
      return nranks <= 3 || bytes >= (1u << 20) ? Algo::kChain : Algo::kTree;
    case CollType::kReduce:
      return Algo::kTree;
    case CollType::kGather:
    case CollType::kScatter:
      return Algo::kDirect;
    case CollType::kAllToAll:
      return Algo::kPairwise;
    case CollType::kBarrier:
      return Algo::kTree;
    default:
      return Algo::kDirect;
  }
}

bool algoSupports(Algo algo, CollType type) {
  switch (algo) {
    case Algo::kOneShot:
      return type != CollType::kSend && type != CollType::kRecv;
    case Algo::kRing:
      return type == CollType::kAllReduce || type == CollType::kAllGather || type == CollType::kReduceScatter;
    case Algo::kTree:
      return type == CollType::kAllReduce || type == CollType::kBroadcast || type == CollType::kReduce ||
             type == CollType::kBarrier;
    case Algo::kHier:
    case Algo::kDoubleTree:
      return type == CollType::kAllReduce;
    case Algo::kChain:
      return type == CollType::kBroadcast;
    case Algo::kDirect:
      return type == CollType::kGather || type == CollType::kScatter;
    case Algo::kPairwise:
      return type == CollType::kAllToAll;
    case Algo::kDirectRead:
      return type == CollType::kAllReduce || type == CollType::kReduceScatter || type == CollType::kAllGather ||
             type == CollType::kBroadcast;
    default:
      return false;
  }
}

int ceilLog2(int n) {
  int levels = 0;
  while ((1 << levels) < n) ++levels;
  return levels;
}

// Across hosts, the all-reduce whose modelled time is least (ties keep the earlier candidate).
Algo fastestAllReduce(size_t bytes, const PlanContext& ctx) {
  Algo best = Algo::kRing;
  double bestUs = modelAllReduceUs(best, bytes, ctx);
  for (Algo candidate : {Algo::kDoubleTree, Algo::kTree, Algo::kHier}) {
    double us = modelAllReduceUs(candidate, bytes, ctx);
    if (us < bestUs) best = candidate, bestUs = us;
  }
  return best;
}

}  // namespace

double modelAllReduceUs(Algo algo, size_t bytes, const PlanContext& ctx) {
  int n = ctx.nranks;
  if (n <= 1) return 0;
  // A pipelined ring or a double tree moves in lock step, so its slowest link sets the pace of
  // every step; a binomial tree pays the network only on the levels whose edges cross hosts.
  const LinkCost& slowest = ctx.crossesNetwork ? ctx.netLink : ctx.shmLink;
  double size = static_cast<double>(bytes);
  switch (algo) {
    case Algo::kRing:
      return 2.0 * (n - 1) * slowest.latencyUs + 2.0 * (n - 1) / n * size / slowest.bytesPerUs;
    case Algo::kTree: {  // binomial: up and down, the root taking every level's data in turn
      int levels = ceilLog2(n);
      int netLevels = ctx.crossesNetwork ? std::min(levels, std::max(1, ctx.treeNetLevels)) : 0;
      double perLevelShm = ctx.shmLink.latencyUs + size / ctx.shmLink.bytesPerUs;
      double perLevelNet = ctx.netLink.latencyUs + size / ctx.netLink.bytesPerUs;
      return 2.0 * ((levels - netLevels) * perLevelShm + netLevels * perLevelNet);
    }
    case Algo::kDoubleTree:
      // A balanced binary tree's depth, up then down; each half crosses a link about once each
      // way, the two trees side by side.
      return 2.0 * ceilLog2(n + 1) * slowest.latencyUs + 2.0 * size / slowest.bytesPerUs;
    case Algo::kHier: {
      int nhosts = ctx.hosts.empty() ? 1 : static_cast<int>(ctx.hosts.size());
      int widest = 1;
      for (const auto& host : ctx.hosts) widest = std::max(widest, static_cast<int>(host.size()));
      // Three phases one after the other: a shared-memory reduce, the leaders' ring, a
      // shared-memory broadcast; each phase boundary costs one more synchronisation.
      double local = 2.0 * ceilLog2(widest) * ctx.shmLink.latencyUs + 2.0 * size / ctx.shmLink.bytesPerUs;
      double across = nhosts <= 1 ? 0
                                  : 2.0 * (nhosts - 1) * slowest.latencyUs +
                                        2.0 * (nhosts - 1) / nhosts * size / slowest.bytesPerUs;
      return (widest > 1 ? local + 2.0 * ctx.shmLink.latencyUs : 0) + across;
    }
    default:
      return 1e30;
  }
}

size_t oneshotInputBytes(const CollCall& call, int nranks) {
  size_t bytes = call.count * call.elemSize;
  switch (call.type) {
    case CollType::kReduceScatter:
    case CollType::kScatter:
    case CollType::kAllToAll:
      return bytes * static_cast<size_t>(nranks);
    case CollType::kBarrier:
      return 0;
    default:
      return bytes;
  }
}

Plan planCall(const CollCall& call, const PlanContext& ctx) {
  Plan plan;
  // A step may use at most half a FIFO: see ring.cc for why that rules out deadlock.
  size_t stepBytes = std::max<size_t>(ctx.slotBytes, ctx.slotBytes * static_cast<size_t>(ctx.fifoDepth / 2));
  plan.maxStepElems = std::max<size_t>(1, stepBytes / call.elemSize);
  size_t input = oneshotInputBytes(call, ctx.nranks);
  bool oneshotFits = ctx.oneshotAvailable && input <= ctx.oneshotBytes;

  Algo forced = ctx.overrides != nullptr ? ctx.overrides[static_cast<int>(call.type)] : Algo::kAuto;
  if (forced != Algo::kAuto) {
    if (!algoSupports(forced, call.type))
      throwError(collInvalidUsage, "COLL_ALGO: algorithm %s cannot run %s", algoName(forced), collTypeName(call.type));
    if (forced == Algo::kOneShot && !oneshotFits)
      throwError(
          collInvalidUsage,
          "COLL_ALGO: oneshot cannot run this %s: it needs every rank on one host with shared memory and at most "
          "%zu input bytes per rank (COLL_ONESHOT_BYTES), got %zu",
          collTypeName(call.type), ctx.oneshotBytes, input);
    if (forced == Algo::kDirectRead && !ctx.directReadAvailable)
      throwError(collInvalidUsage,
                 "COLL_ALGO: cma cannot run: it needs every rank on one host and permission to read the other ranks' "
                 "memory (process_vm_readv; see /proc/sys/kernel/yama/ptrace_scope)");
    plan.algo = forced;
    return plan;
  }
  plan.algo = defaultAlgo(call.type, ctx.nranks, call.count * call.elemSize);
  if (call.type == CollType::kAllReduce && ctx.crossesNetwork)
    plan.algo = fastestAllReduce(call.count * call.elemSize, ctx);
  // Large messages on one host: single-copy reads from the peers' buffers or the FIFO schedule,
  // whichever measures faster on this machine now (see tuner.h and direct_read.h).
  if (ctx.directReadAvailable && ctx.directReadBytes > 0 && algoSupports(Algo::kDirectRead, call.type) &&
      input >= ctx.directReadBytes && ctx.nranks <= 16)
    plan.alternative = Algo::kDirectRead;
  if (oneshotFits) {
    int n = ctx.nranks;
    double oneshotUs = kOneshotLatencyUs + input * oneshotTraffic(call.type, n) / kCopyBytesPerUs;
    double pipelineUs = kStepLatencyUs * 2 * (n - 1) + input * ringTraffic(call.type, n) / kCopyBytesPerUs;
    if (oneshotUs <= pipelineUs || call.type == CollType::kBarrier) plan.algo = Algo::kOneShot;
  }
  return plan;
}

Schedule pointToPointSchedule(const std::vector<CollCall>& calls) {
  // Bytes, whatever each call's datatype: one schedule carries calls of different types.
  Schedule schedule;
  schedule.algorithm = "p2p";
  for (const CollCall& call : calls) {
    const size_t bytes = call.count * call.elemSize;
    if (bytes == 0) continue;
    Step& step = schedule.add(bytes);
    if (call.type == CollType::kSend) {
      step.src = atAddress(call.sendbuff);
      step.sendTo(call.root);
    } else {
      step.dst = atAddress(call.recvbuff);
      step.recvFrom(call.root);
    }
    step.joinNext = true;
  }
  if (!schedule.steps.empty()) schedule.steps.back().joinNext = false;
  return schedule;
}

Schedule buildSchedule(const CollCall& call, const Plan& plan, int rank, int n) {
  PlanContext context;
  context.nranks = n;
  return buildSchedule(call, plan, rank, context);
}

Schedule buildSchedule(const CollCall& call, const Plan& plan, int rank, const PlanContext& ctx) {
  namespace a = algorithms;
  int n = ctx.nranks;
  bool avg = call.op == collAvg;
  size_t step = plan.maxStepElems;
  std::vector<int> order = ctx.ringOrder.empty() ? a::identityOrder(n) : ctx.ringOrder;
  switch (call.type) {
    case CollType::kAllReduce:
      switch (plan.algo) {
        case Algo::kTree:
          return a::treeAllReduce(n, rank, call.count, step, avg);
        case Algo::kDoubleTree:
          return a::doubleTreeAllReduce(order, rank, call.count, step, avg);
        case Algo::kHier:
          return a::hierarchicalAllReduce(ctx.hosts.empty() ? a::singleHostLayout(n) : ctx.hosts, rank, call.count,
                                          step, avg);
        default:
          return a::ringAllReduce(order, rank, call.count, step, avg);
      }
    case CollType::kReduceScatter:
      return a::ringReduceScatter(order, rank, call.count, step, avg);
    case CollType::kAllGather:
      return a::ringAllGather(order, rank, call.count, step);
    case CollType::kBroadcast:
      return plan.algo == Algo::kTree ? a::treeBroadcast(n, rank, call.root, call.count, step)
                                      : a::chainBroadcast(n, rank, call.root, call.count, step);
    case CollType::kReduce:
      return a::treeReduce(n, rank, call.root, call.count, step, avg);
    case CollType::kGather:
      return a::directGather(n, rank, call.root, call.count);
    case CollType::kScatter:
      return a::directScatter(n, rank, call.root, call.count);
    case CollType::kAllToAll:
      return a::pairwiseAllToAll(n, rank, call.count);
    case CollType::kBarrier:
      return a::treeAllReduce(n, rank, 1, step, false);
    default:
      throwError(collInternalError, "buildSchedule: %s has no schedule", collTypeName(call.type));
  }
}

}  // namespace coll
