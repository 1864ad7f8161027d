#include "src/exec/host_engine.h"

#include <algorithm>

#include "common/error.h"
#include "common/logging.h"
#include "kernels/cpu/reduce.h"
#include "src/call_tag.h"
#include "src/collective_table.h"

namespace coll {
HostEngine::HostEngine(HostEngineArgs args)
    : args_(std::move(args)), executor_(*args_.connections, args_.rank, args_.nranks), natives_(kAlgoIdCount) {
  if (args_.localMemory != nullptr) peerCalls_ = std::make_unique<PeerCalls>(*args_.localMemory, args_.rank, args_.nranks);
  collectiveHealthCheck_ = [this] {
    args_.healthCheck();
    if (peerCalls_) peerCalls_->check();
  };
}

ProgressWaiter HostEngine::makeWaiter(const char* what, bool collective) const {
  return ProgressWaiter(args_.bell, args_.spinNs, collective ? collectiveHealthCheck_ : args_.healthCheck,
                        args_.describeStall, what, args_.timeoutMs, args_.drivers);
}

NativeRunner& HostEngine::native(Algo algo) {
  std::unique_ptr<NativeRunner>& runner = natives_[static_cast<size_t>(algo)];
  if (!runner) {
    const AlgorithmRow& row = algorithmRow(algo);
    if (row.makeNative == nullptr || args_.localMemory == nullptr)
      throwError(collInternalError, "%s cannot run natively on this communicator", row.name);
    NativeArgs native;
    native.memory = args_.localMemory;
    native.rank = args_.rank;
    native.nranks = args_.nranks;
    native.streamingBytes = args_.streamingBytes;
    native.oneshotBytes = args_.planContext->oneshotBytes;
    native.peerCalls = peerCalls_.get();
    runner = row.makeNative(native);
  }
  return *runner;
}

const Plan& HostEngine::planFor(const CollCall& call) {
  KeptPlan& kept = keptPlans_[static_cast<int>(call.type)];
  if (!kept.valid || kept.count != call.count || kept.elemSize != call.elemSize) {
    kept.plan = planCall(call, *args_.planContext);
    kept.valid = true;
    kept.count = call.count;
    kept.elemSize = call.elemSize;
  }
  return kept.plan;
}

const Schedule& HostEngine::scheduleFor(const CollCall& call, const Plan& plan) {
  // Variable counts: the schedule follows the arrays, which no shape of a few numbers describes.
  if (call.counts != nullptr) {
    variableSchedule_ = buildSchedule(call, plan, args_.rank, *args_.planContext);
    return variableSchedule_;
  }
  KeptSchedule& kept = keptSchedules_[static_cast<int>(call.type)];
  const ScheduleShape shape{plan.algo, plan.maxStepElems, call.count, call.elemSize, call.root, call.op == collAvg};
  if (!(kept.shape == shape)) {
    // The shape changes only once the schedule is built: a build that throws keeps the old pair.
    kept.schedule = buildSchedule(call, plan, args_.rank, *args_.planContext);
    kept.shape = shape;
  }
  return kept.schedule;
}

void HostEngine::run(const CollCall& call, collStream_t) {
  // Recorded even when the call moves nothing: its peers, if their counts are not zero, find
  // this rank's record of it instead of waiting for their deadline.
  if (peerCalls_) peerCalls_->begin(collectiveTagOf(call));
  if (call.count == 0 && call.type != CollType::kBarrier &&
      (call.counts == nullptr || (call.counts->sendElems == 0 && call.counts->recvElems == 0)))
    return;
  ProgressWaiter waiter = makeWaiter(collTypeName(call.type), /*collective=*/true);
  Plan plan = planFor(call);
  if (plan.alternative == Algo::kAuto) {
    runPlan(call, plan, waiter);
    return;
  }
  // Two valid plans: rank 0 picks by measurement and tells the others in a one-shot broadcast,
  // with how many calls of this collective and size class the choice holds for (tuner.h), so
  // that every rank runs the same one and hears of it once per lease.
  const size_t bytes = call.count * call.elemSize;
  PlanTuner& tuner = tuners_[static_cast<int>(call.type)];
  PlanLease& lease = leases_[static_cast<int>(call.type)][PlanTuner::sizeClassOf(bytes)];
  uint32_t announced[2] = {0, 0};  // the choice, and the calls it holds for
  if (args_.rank == 0)
    announced[0] = tuner.choose(bytes, plan.algo, plan.alternative, &announced[1]) == plan.algo ? 0 : 1;
  if (lease.callsLeft == 0) {
    CollCall agree;
    agree.type = CollType::kBroadcast;
    agree.sendbuff = announced;
    agree.recvbuff = announced;
    agree.count = sizeof(announced);
    agree.datatype = collUint8;
    agree.root = 0;
    native(Algo::kOneShot).run(agree, waiter);
    if (announced[0] > 1 || announced[1] == 0 || announced[1] > PlanTuner::kLeaseCalls)
      throwError(collRemoteError, "rank 0 sent plan choice %u for %u calls, expected 0 or 1 for 1 to %u", announced[0],
                 announced[1], PlanTuner::kLeaseCalls);
    lease.choice = static_cast<uint8_t>(announced[0]);
    lease.callsLeft = announced[1];
  } else if (args_.rank == 0 && announced[1] != 0) {
    throwError(collInternalError, "the plan tuner began a lease while %u calls of the last were left", lease.callsLeft);
  }
  --lease.callsLeft;
  Algo chosen = lease.choice == 0 ? plan.algo : plan.alternative;
  plan.algo = chosen;
  int64_t start = args_.rank == 0 ? monotonicNs() : 0;
  runPlan(call, plan, waiter);
  if (args_.rank == 0) tuner.record(bytes, chosen, (monotonicNs() - start) * 1e-9);
}

void HostEngine::runPlan(const CollCall& call, const Plan& plan, ProgressWaiter& waiter) {
  lastAlgo_ = plan.algo;
  COLL_TRACE(kColl, "rank %d %s count %zu %s: %s", args_.rank, collTypeName(call.type), call.count,
             kernels::dataTypeName(call.datatype), algoName(plan.algo));
  // A native row's runner, once made, is found without the table (small calls repeat this).
  NativeRunner* runner = natives_[static_cast<size_t>(plan.algo)].get();
  if (runner == nullptr && algorithmRow(plan.algo).makeNative != nullptr) runner = &native(plan.algo);
  if (runner != nullptr) {
    runner->run(call, waiter);
    return;
  }
  const Schedule& schedule = scheduleFor(call, plan);
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
  for (const CollCall& call : calls) {
    buffers.singleCopySends = buffers.singleCopySends || call.type == CollType::kRecv;
    if (call.type == CollType::kSend) largestSend = std::max(largestSend, call.count * call.elemSize);
  }
  const bool aboveTheWindow =
      buffers.singleCopySends && args_.pointToPointSingleCopyMax > 0 && largestSend > args_.pointToPointSingleCopyMax;
  if (!aboveTheWindow) {
    executor_.run(schedule, buffers, waiter);
    return;
  }
  std::atomic<uint8_t>* hostPlan = hostSendPlan(largestSend);
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
  const Algo chosen = pointToPointTuner_.choose(largestSend, Algo::kDirect, Algo::kDirectRead);
  buffers.singleCopyLarge = chosen == Algo::kDirectRead;
  if (hostPlan != nullptr) {
    const uint8_t plan =
        buffers.singleCopyLarge ? transport::NativeArea::kSendBySingleCopy : transport::NativeArea::kSendByFifo;
    if (hostPlan->load(std::memory_order_relaxed) != plan) hostPlan->store(plan, std::memory_order_relaxed);
  }
  const int64_t start = monotonicNs();
  executor_.run(schedule, buffers, waiter);
  pointToPointTuner_.record(largestSend, chosen, (monotonicNs() - start) * 1e-9);
}

void HostEngine::waitUntil(const char* what, const std::function<bool()>& ready) {
  ProgressWaiter waiter = makeWaiter(what, /*collective=*/false);
  while (!ready()) waiter.idle();
}

std::atomic<uint8_t>* HostEngine::hostSendPlan(size_t bytes) const {
  if (!args_.pointToPointRankZeroChooses || args_.localMemory == nullptr) return nullptr;
  static_assert(PlanTuner::kSizeClasses == transport::NativeArea::kSendPlanClasses, "one plan per size class");
  return &args_.localMemory->area(0)->largeSendPlans[PlanTuner::sizeClassOf(bytes)];
}

}  // namespace coll
