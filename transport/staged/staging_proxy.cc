#include "transport/staged/staging_proxy.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "common/error.h"
#include "common/logging.h"
#include "transport/device_channels.h"

namespace coll {
namespace transport {
namespace {

constexpr int64_t kHealthIntervalNs = 1000000;  // as the executor's waits: about once a millisecond
constexpr int64_t kSleepNs = 50000;             // the kernels' flags ring nothing: look again this often

// The peers a call's steps send to or receive from.
std::set<int> peersOf(const CallShape& call) {
  std::set<int> peers;
  for (uint32_t i = 0; i < call.nsteps; ++i) {
    const device::DeviceStep& s = call.steps[i];
    for (int k = 0; k < s.nsend; ++k) peers.insert(s.sendPeers[k]);
    for (int k = 0; k < s.nrecv; ++k) peers.insert(s.recvPeers[k]);
  }
  return peers;
}

}  // namespace

StagingProxy::StagingProxy(StagingProxyArgs args) : args_(std::move(args)) {
  int maxPeer = -1;
  for (const StagedLink& l : args_.links) maxPeer = std::max(maxPeer, l.peer);
  linkOfPeer_.assign(static_cast<size_t>(maxPeer + 1), -1);
  for (const StagedLink& l : args_.links) {
    linkOfPeer_[l.peer] = static_cast<int>(links_.size());
    links_.push_back(std::unique_ptr<Link>(new Link{l, StagedSender(l.peer, l.sendRegion, args_.layout),
                                                    StagedReceiver(l.peer, l.recvRegion, args_.layout, l.recvDevice)}));
  }
  for (Domain* carrier : args_.carriers)
    if (ProgressDriver* driver = carrier->progressDriver()) drivers_.push_back(driver);
  thread_ = std::thread([this] { run(); });
}

StagingProxy::~StagingProxy() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StagingProxy::enqueue(const CallShape& call) {
  std::vector<Queued> plans;
  for (int peer : peersOf(call)) {
    if (peer < 0 || peer >= static_cast<int>(linkOfPeer_.size()) || linkOfPeer_[peer] < 0) continue;
    const size_t link = static_cast<size_t>(linkOfPeer_[peer]);
    for (StagedDirection d : {StagedDirection::kSend, StagedDirection::kReceive}) {
      ConnectionPlan plan = planConnection(call, peer, d, args_.frameBytes);
      if (!plan.empty()) plans.push_back({link, d, std::move(plan)});
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_ != collSuccess) throwError(failure_, "%s", failureMessage_.c_str());
    if (plans.empty()) return;
    for (Queued& q : plans) queue_.push_back(std::move(q));
    idle_ = false;
  }
  calls_.fetch_add(1);
  wake_.notify_all();
}

void StagingProxy::fail(collResult_t code, const std::string& message) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_ == collSuccess) {
      failure_ = code;
      failureMessage_ = message;
      first = true;
    }
    queue_.clear();
    failed_.store(true);
  }
  // The kernels stop at their next wait instead of waiting for slices that will not come.
  if (args_.status != nullptr) __atomic_store_n(&args_.status->abort, 1u, __ATOMIC_RELEASE);
  // The peers' proxies stop waiting for this rank's slices at once (a socket shut down, a
  // shared-memory failure word), not at their timeout.
  if (first)
    for (Domain* carrier : args_.carriers)
      carrier->announceFailure(formatString("rank %d: %s", args_.rank, message.c_str()));
  wake_.notify_all();
  drained_.notify_all();
}

collResult_t StagingProxy::error(std::string* message) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (message != nullptr && failure_ != collSuccess) *message = failureMessage_;
  return failure_;
}

void StagingProxy::drain(Deadline deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  drained_.wait_until(lock, deadline, [this] { return idle_ || failure_ != collSuccess; });
  if (failure_ != collSuccess) throwError(failure_, "%s", failureMessage_.c_str());
  if (!idle_) throwError(collTimeout, "rank %d: staged device slices were still in flight at the deadline", args_.rank);
}

bool StagingProxy::takeQueued() {
  std::vector<Queued> taken;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    taken.swap(queue_);
  }
  for (Queued& q : taken) {
    Link& link = *links_[q.link];
    if (q.direction == StagedDirection::kSend) {
      link.sender.enqueue(std::move(q.plan));
    } else {
      link.receiver.enqueue(std::move(q.plan));
    }
  }
  return !taken.empty();
}

StagingProxy::Round StagingProxy::progressLinks() {
  Round round;
  for (auto& owned : links_) {
    Link& link = *owned;
    if (!link.sender.idle()) {
      if (link.sendConnection == nullptr) link.sendConnection = link.where.carrier->sendConnection(link.where.peer);
      const StagedProgress p = link.sender.progress(*link.sendConnection);
      round.moved = round.moved || p == StagedProgress::kMoved;
      if (p != StagedProgress::kWaitsForPeer) {
        link.blockedSinceNs = 0;
      } else if (link.blockedSinceNs == 0) {
        link.blockedSinceNs = monotonicNs();
      }
    } else {
      link.blockedSinceNs = 0;
    }
    if (!link.receiver.idle()) {
      if (link.recvConnection == nullptr) link.recvConnection = link.where.carrier->recvConnection(link.where.peer);
      const StagedProgress p = link.receiver.progress(*link.recvConnection);
      round.moved = round.moved || p == StagedProgress::kMoved;
      round.copying = round.copying || p == StagedProgress::kWaitsForCopy;
    }
    round.busy = round.busy || !link.sender.idle() || !link.receiver.idle();
  }
  return round;
}

void StagingProxy::checkHealth() {
  for (Domain* carrier : args_.carriers) carrier->checkPeers();
  std::string message;
  const collResult_t kernels = deviceStatusError(args_.status, args_.rank, &message);
  if (kernels != collSuccess) throwError(kernels, "%s", message.c_str());
}

void StagingProxy::tellCarriers(ProgressDriver::Executor state) {
  if (state == driverState_) return;
  driverState_ = state;
  for (ProgressDriver* driver : drivers_) driver->executorState(state);
}

void StagingProxy::checkSendTimeouts(int64_t nowNs) const {
  const int64_t limitNs = static_cast<int64_t>(args_.timeoutMs) * 1000000;
  for (const auto& link : links_)
    if (link->blockedSinceNs != 0 && nowNs - link->blockedSinceNs > limitNs)
      throwError(collTimeout,
                 "rank %d: staged device slices for rank %d waited %d ms for it to take them (no frame went out): "
                 "that rank stopped or is too slow",
                 args_.rank, link->where.peer, args_.timeoutMs);
}

void StagingProxy::idleWait(int64_t sinceMoveNs) {
  if (sinceMoveNs < args_.spinNs) {
    sched_yield();
    return;
  }
  Doorbell* bell = args_.bell;
  const uint32_t snapshot = bell->seq.load(std::memory_order_acquire);
  tellCarriers(ProgressDriver::Executor::kAsleep);
  bell->sleeping.store(1, std::memory_order_seq_cst);
  sleepOnDoorbell(bell, snapshot, kSleepNs);
  bell->sleeping.store(0, std::memory_order_relaxed);
}

void StagingProxy::run() {
  int64_t lastMoveNs = monotonicNs();
  while (!stop_.load()) {
    const bool taken = takeQueued();
    try {
      if (failed_.load()) throwError(collInternalError, "stopped");
      tellCarriers(ProgressDriver::Executor::kDriving);
      const Round round = progressLinks();
      for (ProgressDriver* driver : drivers_) driver->progressOnce();
      const int64_t now = monotonicNs();
      if (now - lastHealthNs_ > kHealthIntervalNs) {
        lastHealthNs_ = now;
        checkHealth();
      }
      checkSendTimeouts(now);
      if (round.moved || taken) lastMoveNs = now;
      if (round.busy) {
        if (!round.moved) {
          if (round.copying) {
            sched_yield();
          } else {
            idleWait(now - lastMoveNs);
          }
        }
        continue;
      }
    } catch (const CollError& e) {
      if (!failed_.load()) fail(e.code(), e.what());
    }
    // Nothing to move (or failed): hand the carriers back and wait for the next call.
    tellCarriers(ProgressDriver::Executor::kReturned);
    std::unique_lock<std::mutex> lock(mutex_);
    if (queue_.empty()) {
      idle_ = true;
      drained_.notify_all();
      wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stop_.load() || !queue_.empty(); });
    }
  }
  tellCarriers(ProgressDriver::Executor::kReturned);
}

}  // namespace transport
}  // namespace coll
