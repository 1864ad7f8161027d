// The communicator: one rank's view of a group of ranks. It owns the rank's transports, its
// executor and one-shot path, and runs every collective of the C API on host memory. All state
// hangs off it; nothing is process-wide except the parameter cache.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "src/coll_call.h"
#include "src/direct_read.h"
#include "src/executor.h"
#include "src/oneshot.h"
#include "src/params.h"
#include "src/plan/planner.h"
#include "src/plan/tuner.h"
#include "transport/net/net_domain.h"
#include "transport/shm/shm_transport.h"

namespace coll {

struct CommOptions {
  int timeoutMs = 300000;
  std::string name;
};

class Communicator : public ConnectionSource {
 public:
  // Collective over the nranks callers: exchanges peer information through `store` (whose keys
  // must be private to this communicator), and sets up the transports.
  Communicator(std::shared_ptr<bootstrap::Store> store, int nranks, int rank, const CommOptions& options);
  ~Communicator() override;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const std::string& name() const { return options_.name; }
  const CommOptions& options() const { return options_; }

  // Runs one collective or point-to-point call to completion (host memory).
  void run(const CollCall& call);
  // Runs send/recv calls together (a group): no ordering between them, so no deadlock.
  void runPointToPoint(const std::vector<CollCall>& calls);

  // MPI_Comm_split: nullptr for COLL_SPLIT_NOCOLOR.
  std::unique_ptr<Communicator> split(int color, int key, const CommOptions& options);

  // From any thread: ends pending calls with an error and tells the peers.
  void abort();
  bool aborted() const { return aborted_.load(); }
  // collSuccess, or the error that broke the communicator.
  collResult_t asyncError() const { return asyncError_.load(); }
  // Records a failure: later calls fail fast and peers stop waiting for this rank.
  void markFailed(collResult_t code, const std::string& message);
  // Throws the error that broke the communicator, if any.
  void throwIfFailed();

  // For colltopo and logs: who is where, what connects them, and what the planner knows.
  const std::vector<transport::PeerInfo>& peers() const { return peers_; }
  const char* transportBetween(int a, int b) const;
  const PlanContext& planContext() const { return planContext_; }
  std::string socketAddress() const { return net_ ? net_->listenAddress() : std::string(); }

  transport::SendConnection* sendConnection(int peer) override;
  transport::RecvConnection* recvConnection(int peer) override;

 private:
  void setupTransports();
  // Maps the segments of this host's ranks; returns whether they may all read each other's memory.
  bool setupSharedMemory(const std::vector<int>& localRanks);
  // Connects the sockets; collective (every rank calls it when any pair uses sockets).
  void setupSockets(const std::vector<int>& netPeers);
  std::string chooseSocketAddress() const;
  bool probePeersMemory(const std::vector<bootstrap::Bytes>& probes, const std::vector<int>& localRanks);
  Deadline initDeadline() const;
  void healthCheck() const;
  // A waiter for one call: its deadline starts now.
  ProgressWaiter makeWaiter(const char* what) const;
  void runPlanned(const CollCall& call, ProgressWaiter& waiter);
  void runPlan(const CollCall& call, const Plan& plan, ProgressWaiter& waiter);
  void checkConsistency(const CollCall& call, ProgressWaiter& waiter);

  std::shared_ptr<bootstrap::Store> store_;
  int nranks_;
  int rank_;
  CommOptions options_;
  Params params_;
  std::vector<transport::PeerInfo> peers_;
  std::unique_ptr<transport::ShmDomain> shm_;
  std::unique_ptr<transport::NetDomain> net_;
  transport::Doorbell localBell_;  // used when there is no shared memory
  transport::Doorbell* bell_ = &localBell_;
  std::vector<std::unique_ptr<transport::SendConnection>> sends_;
  std::vector<std::unique_ptr<transport::RecvConnection>> recvs_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<OneShot> oneshot_;
  std::unique_ptr<DirectRead> directRead_;
  uint64_t crossMemoryProbe_ = 0;  // a word peers read to learn whether cross-memory attach works
  PlanContext planContext_;
  PlanTuner tuner_;  // used on rank 0 only
  int64_t spinNs_ = 0;
  uint64_t splitCount_ = 0;
  uint64_t callCount_ = 0;
  std::atomic<bool> aborted_{false};
  std::atomic<collResult_t> asyncError_{collSuccess};
  std::string failureMessage_;
  // healthCheck as the waiters take it, built once rather than per call.
  const std::function<void()> health_ = [this] { healthCheck(); };
  std::mutex failureMutex_;
};

// Information about this process that identifies its host (for grouping ranks by host).
transport::PeerInfo describeSelf(int rank, const Params& params);

}  // namespace coll
