// The host engine: runs host-memory calls to completion on this rank. The planner picks a row of
// the algorithm table; a schedule row's schedule goes to the executor (executor.h) over the
// routes' connections, a native row runs itself on the memory the host's ranks share. Where the
// planner offers two valid plans, rank 0 times them (src/plan/tuner.h) and tells the others its
// choice in a one-byte one-shot broadcast, so that every rank runs the same one. Waiting (spin,
// sleep, deadline, health) is progress.h's.
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
#include "src/plan/planner.h"
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
  void runPlan(const CollCall& call, const Plan& plan, ProgressWaiter& waiter);
  NativeRunner& native(Algo algo);
  // planCall's answer, kept per collective for the last call's count and element size: a training
  // loop repeats the same calls, and planning them again would cost a few hundred instructions of
  // a call that takes a few hundred nanoseconds.
  const Plan& planFor(const CollCall& call);
  // The schedule of a schedule row, kept per collective for the last call it was built for: a
  // schedule depends on the call's shape (count, element size, root, whether the op averages) and
  // the plan, never on its buffers, and building it allocates and fills a vector of steps (a few
  // percent of an 8-byte broadcast over sockets).
  const Schedule& scheduleFor(const CollCall& call, const Plan& plan);

  Schedule pointToPointSchedule_;  // reused by every point-to-point call (its capacity stays)
  Schedule variableSchedule_;      // a variable-count call's, rebuilt at each (its capacity stays)

  struct KeptPlan {
    bool valid = false;
    size_t count = 0;
    size_t elemSize = 0;
    Plan plan;
  };

  HostEngineArgs args_;
  Algo lastAlgo_ = Algo::kAuto;  // the last plan's row, for the flight recorder
  // Where every rank shares this host's memory: the records of which call each rank runs, and
  // the health check of a collective's waits, which compares them.
  std::unique_ptr<PeerCalls> peerCalls_;
  std::function<void()> collectiveHealthCheck_;
  KeptPlan keptPlans_[static_cast<int>(CollType::kCount)];

  // What a schedule row's schedule depends on besides the rank and the communicator. The default
  // (kAuto) matches no call's: no schedule row is kAuto, so a collective's first call builds.
  struct ScheduleShape {
    Algo algo = Algo::kAuto;
    size_t maxStepElems = 0;
    size_t count = 0;
    size_t elemSize = 0;
    int root = 0;
    bool averages = false;
    bool operator==(const ScheduleShape& o) const {
      return algo == o.algo && maxStepElems == o.maxStepElems && count == o.count && elemSize == o.elemSize &&
             root == o.root && averages == o.averages;
    }
  };
  struct KeptSchedule {
    ScheduleShape shape;
    Schedule schedule;
  };
  KeptSchedule keptSchedules_[static_cast<int>(CollType::kCount)];
  Executor executor_;
  std::vector<std::unique_ptr<NativeRunner>> natives_;  // indexed by Algo, made at first use
  // Rank 0's measured choice between a collective's two plans, per collective (tuner.h), and on
  // every rank the lease of calls the last choice it heard of holds for, per collective and size
  // class: while calls are left, no rank asks rank 0.
  PlanTuner tuners_[static_cast<int>(CollType::kCount)];
  struct PlanLease {
    uint32_t callsLeft = 0;
    uint8_t choice = 0;  // 0: the plan's usual algorithm, 1: its alternative
  };
  PlanLease leases_[static_cast<int>(CollType::kCount)][PlanTuner::kSizeClasses];
  // This rank's own choice for large point-to-point sends (pointToPointSingleCopyMax): the
  // receiver follows whatever each slot carries, so no rank needs to agree with another for
  // correctness; where ranks outnumber cores they agree for speed (pointToPointRankZeroChooses).
  PlanTuner pointToPointTuner_;
  // Where rank 0's choice for large sends of `bytes` lies (pointToPointRankZeroChooses), or null.
  std::atomic<uint8_t>* hostSendPlan(size_t bytes) const;
};

}  // namespace coll
