#include "src/exec/host_engine.h"

#include <algorithm>

#include "common/error.h"
#include "common/logging.h"
#include "kernels/cpu/reduce.h"
#include "src/call_tag.h"
#include "src/collective_table.h"
#include "src/plan/planner.h"

namespace coll {
namespace {

// What the planner makes a native row's runner with: this rank's share of the host's memory.
NativeArgs nativeArgsOf(const HostEngineArgs& args, PeerCalls* peerCalls) {
  NativeArgs native;
  native.memory = args.localMemory;
  native.rank = args.rank;
  native.nranks = args.nranks;
  native.streamingBytes = args.streamingBytes;
  native.oneshotBytes = args.planContext->oneshotBytes;
  native.peerCalls = peerCalls;
  return native;
}

}  // namespace

HostEngine::HostEngine(HostEngineArgs args)
    : args_(std::move(args)),
      peerCalls_(args_.localMemory != nullptr
                     ? std::make_unique<PeerCalls>(*args_.localMemory, args_.rank, args_.nranks)
                     : nullptr),
      planner_(*args_.planContext, nativeArgsOf(args_, peerCalls_.get())),
      executor_(*args_.connections, args_.rank, args_.nranks) {
  collectiveHealthCheck_ = [this] {
    args_.healthCheck();
    if (peerCalls_) peerCalls_->check();
  };
}

ProgressWaiter HostEngine::makeWaiter(const char* what, bool collective) const {
  return ProgressWaiter(args_.bell, args_.spinNs, collective ? collectiveHealthCheck_ : args_.healthCheck,
                        args_.describeStall, what, args_.timeoutMs, args_.drivers);
}

void HostEngine::run(const CollCall& call, collStream_t) {
  // Recorded even when the call moves nothing: its peers, if their counts are not zero, find
  // this rank's record of it instead of waiting for their deadline.
  if (peerCalls_) peerCalls_->begin(collectiveTagOf(call));
  if (movesNothing(call)) return;
  ProgressWaiter waiter = makeWaiter(collTypeName(call.type), /*collective=*/true);
  // The pairwise row is the variable-count all-to-all's only one (algorithm_table.cc): a small
  // one exchanges through the slots without planning its per-call schedule.
  if (call.type == CollType::kAllToAllV && executor_.tryRunSmallAllToAllV(call, waiter)) {
    lastAlgo_ = Algo::kPairwise;
    COLL_TRACE(kColl, "rank %d %s %s: %s, one slot a pair", args_.rank, collTypeName(call.type),
               kernels::dataTypeName(call.datatype), algoName(lastAlgo_));
    return;
  }
  // Alive until the call ends: where rank 0's tuner chose the row, it times the call.
  const RunnableCall runnable = planner_.plan(call, waiter);
  lastAlgo_ = runnable.algo;
  COLL_TRACE(kColl, "rank %d %s count %zu %s: %s", args_.rank, collTypeName(call.type), call.count,
             kernels::dataTypeName(call.datatype), algoName(runnable.algo));
  if (runnable.native != nullptr)
    runnable.native->run(call, waiter);
  else
    runSchedule(call, *runnable.schedule, waiter);
}

void HostEngine::runSchedule(const CollCall& call, const Schedule& schedule, ProgressWaiter& waiter) {
  ExecBuffers buffers;
  uint8_t barrierIn = 0, barrierOut = 0;
  buffers.send = call.type == CollType::kBarrier ? &barrierIn : call.sendbuff;
  buffers.recv = call.type == CollType::kBarrier ? &barrierOut : call.recvbuff;
  buffers.datatype = call.datatype;
  buffers.op = call.op;
  buffers.tag = collectiveTagOf(call);
  buffers.elemSize = call.elemSize;
  buffers.nranks = args_.nranks;
  buffers.streamOutput = args_.streamingBytes > 0 && call.count * call.elemSize >= args_.streamingBytes;
  if (call.type != CollType::kBarrier) {
    size_t sendElems = 0, recvElems = 0;
    bufferElements(call, args_.rank, args_.nranks, &sendElems, &recvElems);
    buffers.sendBytes = sendElems * call.elemSize;
    buffers.recvBytes = recvElems * call.elemSize;
  }
  // A variable-count all-to-all's pairs exchange in one batch, every send beside its pair's
  // receive, as in a group that sends and receives: its sends may go by a single copy, each as
  // its own size says (the receiver follows whatever each slot carries).
  if (call.type == CollType::kAllToAllV) {
    size_t largestSend = 0;
    for (int p = 0; p < args_.nranks; ++p)
      if (p != args_.rank) largestSend = std::max(largestSend, call.counts->sendcounts[p] * call.elemSize);
    runWithSingleCopies(schedule, buffers, largestSend, exchangeSends_, waiter);
    return;
  }
  executor_.run(schedule, buffers, waiter);
}

void HostEngine::runPointToPoint(const std::vector<CollCall>& calls, collStream_t) {
  // Point-to-point moves bytes, whatever the datatypes: one byte-typed schedule serves calls of
  // different types, and every transfer progresses together.
  ProgressWaiter waiter =
      makeWaiter(calls.size() == 1 ? collTypeName(calls[0].type) : "GroupEnd", /*collective=*/false);
  if (executor_.tryRunSmallPointToPoint(calls, waiter)) return;
  fillPointToPointSchedule(calls, pointToPointSchedule_);
  const Schedule& schedule = pointToPointSchedule_;
  if (schedule.steps.empty()) return;
  ExecBuffers buffers;
  buffers.datatype = collUint8;
  buffers.elemSize = 1;
  buffers.nranks = args_.nranks;
  size_t largestSend = 0;
  bool receives = false;
  for (const CollCall& call : calls) {
    receives = receives || call.type == CollType::kRecv;
    if (call.type == CollType::kSend) largestSend = std::max(largestSend, call.count * call.elemSize);
  }
  // A group of sends alone stays eager: it may return before any receiver arrives.
  if (!receives) {
    executor_.run(schedule, buffers, waiter);
    return;
  }
  runWithSingleCopies(schedule, buffers, largestSend, pointToPointSends_, waiter);
}

void HostEngine::runWithSingleCopies(const Schedule& schedule, ExecBuffers& buffers, size_t largestSend,
                                     LargeSends& large, ProgressWaiter& waiter) {
  buffers.singleCopySends = true;
  const bool aboveTheWindow = args_.pointToPointSingleCopyMax > 0 && largestSend > args_.pointToPointSingleCopyMax;
  if (!aboveTheWindow) {
    executor_.run(schedule, buffers, waiter);
    return;
  }
  std::atomic<uint8_t>* hostPlan = hostSendPlan(large, largestSend);
  if (args_.pointToPointRankZeroChooses && (hostPlan == nullptr || args_.rank != 0)) {
    // The way rank 0 sends now (a single copy until it has chosen); with no memory that every
    // rank shares, a single copy.
    buffers.singleCopyLarge =
        hostPlan == nullptr || hostPlan->load(std::memory_order_relaxed) != transport::NativeArea::kSendByFifo;
    executor_.run(schedule, buffers, waiter);
    return;
  }
  // The FIFO (kDirect: copied into the slots and out) or a single copy (kDirectRead: read
  // straight from this rank's buffer), timed here and chosen by this rank alone, or by rank 0 for
  // every rank of a crowded host.
  const Algo chosen = large.tuner.choose(largestSend, Algo::kDirect, Algo::kDirectRead);
  buffers.singleCopyLarge = chosen == Algo::kDirectRead;
  if (hostPlan != nullptr) {
    const uint8_t plan =
        buffers.singleCopyLarge ? transport::NativeArea::kSendBySingleCopy : transport::NativeArea::kSendByFifo;
    if (hostPlan->load(std::memory_order_relaxed) != plan) hostPlan->store(plan, std::memory_order_relaxed);
  }
  const int64_t start = monotonicNs();
  executor_.run(schedule, buffers, waiter);
  large.tuner.record(largestSend, chosen, (monotonicNs() - start) * 1e-9);
}

void HostEngine::waitUntil(const char* what, const std::function<bool()>& ready) {
  ProgressWaiter waiter = makeWaiter(what, /*collective=*/false);
  while (!ready()) waiter.idle();
}

std::atomic<uint8_t>* HostEngine::hostSendPlan(const LargeSends& large, size_t bytes) const {
  if (!args_.pointToPointRankZeroChooses || args_.localMemory == nullptr) return nullptr;
  static_assert(PlanTuner::kSizeClasses == transport::NativeArea::kSendPlanClasses, "one plan per size class");
  return &(args_.localMemory->area(0)->*large.plans)[PlanTuner::sizeClassOf(bytes)];
}

}  // namespace coll
