// The host engine: runs host-memory calls to completion on this rank. It asks the planner once
// per call for what runs it (src/plan/host_planner.h: the row, already agreed on by every rank
// where rank 0's tuner chose it) and runs that: a schedule goes to the executor (executor.h) over
// the routes' connections, a native row's runner runs itself on the memory the host's ranks share.
// Waiting (spin, sleep, deadline, health) is progress.h's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "src/algorithms/plan_context.h"
#include "src/exec/engine.h"
#include "src/exec/executor.h"
#include "src/exec/peer_calls.h"
#include "src/exec/progress.h"
#include "src/plan/host_planner.h"
#include "src/plan/tuner.h"
#include "transport/local_memory.h"

namespace coll {

struct HostEngineArgs {
  int rank = 0;
  int nranks = 1;
  ConnectionSource* connections = nullptr;  // this rank's routes
  transport::Doorbell* bell = nullptr;      // the rank's doorbell, which peers ring
  std::vector<transport::ProgressDriver*> drivers;
  transport::LocalMemory* localMemory = nullptr;  // when every rank shares this host's memory
  const PlanContext* planContext = nullptr;
  size_t streamingBytes = 0;  // COLL_STREAMING_BYTES
  int64_t spinNs = 0;
  // Point-to-point groups that send and receive: a message above this many bytes (the top of the
  // shared-memory single-copy window) goes through the FIFO or by a single copy, whichever this
  // rank measured faster for its size (PlanTuner). Which wins depends on whether the ranks' cores
  // share a cache, which a virtual machine may change while a job runs: at 1 MiB between two
  // ranks the FIFO measured faster where they did and slower where they did not
  // (docs/performance.md, "Defaults, and the measurement behind each"). 0: never measured, the
  // window alone decides (the window's top set, or single copies off: TransportSettings).
  size_t pointToPointSingleCopyMax = 0;
  // Where the host's ranks outnumber its cores, rank 0 alone measures and every rank sends such
  // messages the way rank 0 does now (its NativeArea's largeSendPlans); without memory shared by
  // every rank, by single copy, unmeasured. Each rank measuring alone did not work there: a rank
  // that tried single copies while its neighbours used the FIFO found them slow, so 4 ranks on 2
  // cores at 256 KiB sendrecv took the FIFO for many calls when single copies were the faster;
  // yet where the cores share a cache the FIFO is the faster (docs/performance.md,
  // "Choices in the code, and the measurement behind each").
  bool pointToPointRankZeroChooses = false;
  int timeoutMs = 300000;
  std::function<void()> healthCheck;  // throws when a peer failed or the communicator was aborted
  // For a timeout's message: the peers that did not begin the call or stopped moving ("" if none seen).
  std::function<std::string()> describeStall;
};

class HostEngine : public Engine {
 public:
  explicit HostEngine(HostEngineArgs args);
  const char* name() const override { return "host"; }
  void run(const CollCall& call, collStream_t stream) override;
  void runPointToPoint(const std::vector<CollCall>& calls, collStream_t stream) override;
  Algo lastAlgorithm() const override { return lastAlgo_; }
  // Waits, as a call waits for its peers (spin, then sleep on the doorbell, the deadline, the
  // peers' health), until `ready` is true; `what` names the wait in a timeout's message.
  void waitUntil(const char* what, const std::function<bool()>& ready);

 private:
  // A waiter for one call (its deadline starts at its first wait); a collective's also compares
  // the peers' call records when it waits long (peer_calls.h).
  ProgressWaiter makeWaiter(const char* what, bool collective) const;
  void runSchedule(const CollCall& call, const Schedule& schedule, ProgressWaiter& waiter);

  // How sends past the single-copy window go, for one kind of batch whose sends each have their
  // receive beside them: its own tuner, and where rank 0's choice lies on a crowded host.
  struct LargeSends {
    PlanTuner tuner;
    std::atomic<uint8_t> (transport::NativeArea::*plans)[transport::NativeArea::kSendPlanClasses];
  };
  // Runs `schedule` with single-copy sends (buffers.singleCopySends), choosing for sends past the
  // window (largestSend above pointToPointSingleCopyMax) the FIFO or a single copy: rank 0's
  // choice where ranks outnumber cores, else this rank's measurement, which this call adds to.
  void runWithSingleCopies(const Schedule& schedule, ExecBuffers& buffers, size_t largestSend, LargeSends& large,
                           ProgressWaiter& waiter);

  Schedule pointToPointSchedule_;  // reused by every point-to-point call (its capacity stays)

  HostEngineArgs args_;
  Algo lastAlgo_ = Algo::kAuto;  // the last plan's row, for the flight recorder
  // Where every rank shares this host's memory: the records of which call each rank runs, and
  // the health check of a collective's waits, which compares them.
  std::unique_ptr<PeerCalls> peerCalls_;
  std::function<void()> collectiveHealthCheck_;
  HostPlanner planner_;
  Executor executor_;
  // This rank's own choice for large point-to-point sends (pointToPointSingleCopyMax), and for
  // the pairs of a variable-count all-to-all: the receiver follows whatever each slot carries, so
  // no rank needs to agree with another for correctness; where ranks outnumber cores they agree
  // for speed (pointToPointRankZeroChooses).
  LargeSends pointToPointSends_{{}, &transport::NativeArea::largeSendPlans};
  LargeSends exchangeSends_{{}, &transport::NativeArea::largeExchangePlans};
  // Where rank 0's choice for large sends of `bytes` lies (pointToPointRankZeroChooses), or null.
  std::atomic<uint8_t>* hostSendPlan(const LargeSends& large, size_t bytes) const;
};

}  // namespace coll
