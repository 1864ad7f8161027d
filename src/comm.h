// The communicator: one rank's view of a group of ranks. It holds the ranks' descriptions, one
// transport domain for every transport some pair of ranks uses and the route to each peer
// (transport/routes.h), the plan context, and the execution engines (src/exec/engine.h); it runs
// every call on the engine for the call's memory, and keeps the one failure state that the
// transports and both engines report into. All state hangs off it; nothing is process-wide except
// the parameter cache.
//
// One job per file: comm_init.cc (peers, shared settings, transports, plan context, engines),
// comm_run.cc (running calls), comm_device.cc (device memory: the lazy, collective setup of the
// device transports and engine at the first call with a stream, and their teardown),
// comm_check.cc (COLL_CHECK), comm_split.cc (collCommSplit), comm_failure.cc (health,
// failure, abort, revoke), comm_trace.cc (the flight recorder, dumps, the hang report and the
// watcher thread), comm_shrink.cc (collCommShrink) and comm_grow.cc (collCommGrow).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/rank_exchange.h"
#include "bootstrap/store.h"
#include "common/error.h"
#include "src/algorithms/plan_context.h"
#include "src/coll_call.h"
#include "src/exec/engine.h"
#include "src/exec/executor.h"
#include "src/exec/host_engine.h"
#include "src/ft/meeting_point.h"
#include "src/params.h"
#include "src/trace/recorder.h"
#include "transport/domain.h"
#include "transport/routes.h"

namespace coll {

namespace trace {
class CommWatcher;
}

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
  // Unique in this process, never reused: what last-error messages are kept by.
  uint64_t id() const { return id_; }
  const std::string& name() const { return options_.name; }
  const CommOptions& options() const { return options_; }

  // A call of this communicator running now: an entry point's, or collGroupEnd's for the calls
  // queued in its group. collCommAbort waits until none is before it frees the communicator.
  class CallInFlight {
   public:
    explicit CallInFlight(Communicator& comm) : comm_(comm) { comm_.callsInFlight_.fetch_add(1); }
    ~CallInFlight() { comm_.callsInFlight_.fetch_sub(1); }
    CallInFlight(const CallInFlight&) = delete;
    CallInFlight& operator=(const CallInFlight&) = delete;

   private:
    Communicator& comm_;
  };
  int callsInFlight() const { return callsInFlight_.load(); }

  // The engine for calls with this stream: the host engine for NULL (host memory), the device
  // engine for a CUDA stream. Throws collInvalidUsage, naming what is missing, where device
  // memory cannot run (no GPU, no CUDA in this build). The first call with a stream sets up the
  // device transports and engine, collectively: every rank's first call with a stream (whatever
  // call it is) joins the same setup, through the store (comm_device.cc).
  // Inline for host memory, which every host call asks for twice (the API, then run).
  Engine& engineFor(collStream_t stream) { return stream == nullptr ? *hostEngine_ : streamEngineFor(stream); }
  // One collective: host memory to completion, device memory enqueued on `stream`.
  void run(const CollCall& call, collStream_t stream);
  // Sends and receives issued together (a group): no ordering between them, so no deadlock.
  void runPointToPoint(const std::vector<CollCall>& calls, collStream_t stream);
  // collRecvAny (comm_any_source.cc): receives, into host memory, the next message that any rank
  // sends this one, and returns that rank. Throws collInvalidUsage where it cannot work.
  int recvFromAnySource(const CollCall& call);
  // Where it can: every rank in this host's shared memory. The same answer on every rank.
  bool canRecvFromAnySource() const;

  // collCommFinalize: waits until the device launches enqueued so far have ended (host calls
  // ended when they returned). Throws collTimeout after the communicator's timeout.
  void finalize();

  // MPI_Comm_split: nullptr for COLL_SPLIT_NOCOLOR.
  std::unique_ptr<Communicator> split(int color, int key, const CommOptions& options);

  // From any thread: ends pending calls with an error and tells the peers.
  void abort();
  bool aborted() const { return aborted_.load(); }
  // collCommRevoke, from any thread: this rank's pending call and every later one fail with
  // collRemoteError, and every other rank's do too (the transports' failure notice, and a message
  // through the store for ranks no transport connects yet). The communicator stays, for shrink.
  void revoke();

  // collCommShrink (comm_shrink.cc): the survivors agree on the ranks to leave out (`exclude`,
  // the union of every survivor's, and the ranks found gone) and build a communicator of the
  // others. `revokeFirst`: revoke this one first (COLL_SHRINK_ABORT).
  std::unique_ptr<Communicator> shrink(const std::vector<int>& exclude, bool revokeFirst, const CommOptions& options);
  // For a communicator that shrink made: its parent's ranks that it left out, ascending.
  const std::vector<int>& excludedFromParent() const { return excludedFromParent_; }

  // collCommGrow (comm_grow.cc), on the ranks of this communicator: rank 0's `id` reaches every
  // rank over this communicator (the others may pass null, or the same id).
  collUniqueId shareGrowId(const collUniqueId* id);
  // On the grown communicator: checks that its first `oldSize` ranks are the existing ones, on
  // every rank alike (throws collInvalidUsage naming a rank in the wrong place).
  void checkGrowth(bool existing, int oldSize);

  // The flight recorder (comm_trace.cc): writes this rank's dump to `path` ("" names a file in
  // COLL_TRACE_DIR, or the current directory). Returns the path written.
  std::string dumpTrace(const char* reason, const std::string& path);
  const trace::FlightRecorder& recorder() const { return recorder_; }
  // The same on every rank of this communicator (rank 0's at init): names its dumps.
  uint64_t commToken() const { return commToken_; }
  // collSuccess, or the error that broke the communicator: recorded by a failed call, or
  // reported since by an engine (a device kernel that timed out).
  collResult_t asyncError();
  // Records a failure: later calls fail fast and peers stop waiting for this rank.
  void markFailed(collResult_t code, const std::string& message);
  // Throws the error that broke the communicator, if any.
  void throwIfFailed();
  // -1: this rank has no GPU yet: the thread that made the communicator had no current CUDA
  // context, and no call with a stream came since (which then sets it to the stream's device).
  int cudaDevice() const { return cudaDevice_.load(); }

  // For colltopo and logs: who is where, what connects them, and what the planner knows.
  const std::vector<transport::PeerInfo>& peers() const { return peers_; }
  // The transport between two ranks of this communicator, by the same rule every rank applies.
  const char* transportBetween(int a, int b) const;
  const PlanContext& planContext() const { return planContext_; }
  // "net 10.0.0.2:41235": where this rank listens, per domain that listens ("" for none).
  std::string addresses() const;
  // Per host-memory domain (in table order): its name and what it holds so far. Connections are
  // made at first use, so this grows with the peers the plans used (transport/domain.h).
  std::vector<std::pair<std::string, transport::DomainUsage>> transportUsage() const;
  // The memory every rank maps (shared memory, where all ranks share one host), or null.
  transport::LocalMemory* localMemory() const { return localMemory_; }

  transport::SendConnection* sendConnection(int peer) override;
  transport::RecvConnection* recvConnection(int peer) override;

 private:
  void exchangePeers();
  // The all-gathers of init, split and device setup: between the ranks (bootstrap/rank_exchange.h)
  // when the store is a TCP one, else through the store. Collective, in the same order on every rank.
  std::vector<bootstrap::Bytes> gatherFromRanks(const std::string& tag, const bootstrap::Bytes& mine,
                                                Deadline deadline);
  void setupTransports();
  // Creates a domain for every transport `routes` use, with `settings`; routeTo (may be null) gets
  // each member's domain.
  void createDomains(const transport::Routes& routes, const transport::TransportSettings* settings,
                     std::vector<std::unique_ptr<transport::Domain>>* domains,
                     std::vector<transport::Domain*>* routeTo);
  // The domains' setup rounds and the closing barrier, through the store under `prefix`.
  void runDomainSetup(std::vector<std::unique_ptr<transport::Domain>>& domains, const std::string& prefix,
                      Deadline deadline);
  // comm_device.cc.
  Engine& deviceEngineFor(collStream_t stream);
  // engineFor's answer for a CUDA stream: refused without a usable GPU, else deviceEngineFor.
  Engine& streamEngineFor(collStream_t stream);
  // Tells the ranks' GPUs apart and which map each other's memory (comm_device_islands.cc); the
  // slowest link among the GPUs of any island of several, the same on every rank (plans must
  // agree), where the topology knows them.
  std::optional<LinkCost> placeDeviceIslands(int device);
  std::optional<LinkCost> slowestOfEveryRank(const std::optional<LinkCost>& mine);
  void setupDevice(int device, const transport::Routes& routes, const std::optional<LinkCost>& gpuLink);
  // Every rank's `mine` (all of one size), through the host engine's all-gather: the device
  // engine's exchange of call buffers between rank processes (comm_device.cc).
  std::vector<std::vector<uint8_t>> gatherOnHost(const std::vector<uint8_t>& mine);
  // The channels the device kernels use: one device domain's, with the others' ranks adopted.
  transport::DeviceChannels* joinDeviceChannels(const transport::Routes& routes);
  void teardownDevice() noexcept;
  void describePlanContext();
  void startEngines();
  // The ranks on this rank's machine (one kernel), whatever connects them.
  int ranksOnThisMachine() const;
  // More of them than the machine has cores. Every rank of a machine counts the same ranks and
  // cores, so all decide alike.
  bool ranksShareCores() const;
  Deadline initDeadline() const;
  // comm_any_source.cc: counts a host-memory group's sends where receivers from any source see
  // them, and the messages its receives take; then the sender whose count is ahead, or -1.
  void countPointToPoint(const std::vector<CollCall>& calls);
  int pendingSender();
  // Throws when the communicator was aborted or a peer failed (every transport's health check).
  void healthCheck() const;
  // For a timeout's message: the ranks that did not begin this rank's collective, or stopped
  // moving in it, as far as the transports can see ("" when none can tell).
  std::string describeStall() const;
  // A call failed with `error`: records the failure (markFailed) and throws. A mismatch of calls
  // between ranks (src/call_tag.h) has its message left in the store for peers across the network,
  // and a failure learned from a closed connection takes such a message where a peer left one. A
  // timeout gets the hang report (the peers' states through the store, comm_trace.cc).
  [[noreturn]] void failCall(const CollError& error);
  void shareMismatch(const std::string& message);
  std::string sharedMismatch();  // "" when no rank left one
  void checkConsistency(const CollCall& call);
  // comm_trace.cc.
  void startWatching();
  std::string traceReport(const char* reason, size_t newestCalls) const;
  std::string reportHang();
  void dumpTraceFor(const char* reason, unsigned policy) noexcept;
  std::string silenceOf(int rank) const;
  // comm_failure.cc: `rank` revoked the communicator (this one, or a peer its watcher heard), or
  // (`excluded`) told this rank that the survivors shrank it without this rank.
  void revokedBy(int rank, bool excluded);
  // COLL_CHECK of a variable-count call whose descriptions agreed: every rank's arrays.
  void checkVariableCounts(const CollCall& call);

  uint64_t id_;
  std::shared_ptr<bootstrap::Store> store_;
  std::unique_ptr<bootstrap::RankExchange> exchange_;  // null: all-gathers go through the store
  int nranks_;
  int rank_;
  CommOptions options_;
  Params params_;
  std::vector<transport::PeerInfo> peers_;
  transport::TransportSettings transportSettings_;
  transport::Routes routes_;
  std::vector<std::unique_ptr<transport::Domain>> domains_;  // in table order
  std::vector<transport::Domain*> routeTo_;                  // per rank: the domain of this rank's route
  transport::Doorbell localBell_;                            // used when no domain shares one
  transport::Doorbell* bell_ = &localBell_;
  transport::LocalMemory* localMemory_ = nullptr;  // a domain's memory that every rank maps, if any
  PlanContext planContext_;
  std::unique_ptr<HostEngine> hostEngine_;
  // Device memory (comm_device.cc), set up at the first call with a stream.
  std::atomic<int> cudaDevice_{-1};
  std::mutex deviceMutex_;  // setup; abort reads deviceEngine_ only once it is published
  transport::TransportSettings deviceSettings_;
  std::vector<std::unique_ptr<transport::Domain>> deviceDomains_;
  std::unique_ptr<Engine> deviceEngine_;
  std::atomic<Engine*> deviceEngineReady_{nullptr};
  std::vector<uint64_t> receivedFrom_;           // per rank: messages this rank's receives took
  std::atomic<uint64_t>* sentCounts_ = nullptr;  // this rank's NativeArea::pointToPointSent
  int nextSender_ = 0;                           // where the next search for a sender starts
  uint64_t splitCount_ = 0;
  uint64_t callCount_ = 0;
  // Fault tolerance (comm_trace.cc, comm_failure.cc, comm_shrink.cc).
  trace::FlightRecorder recorder_;
  uint64_t commToken_ = 0;
  std::unique_ptr<ft::MeetingListener> meetingListener_;  // null on a store in process memory
  std::vector<ft::MeetingCard> meetingCards_;             // every rank's, from init
  std::unique_ptr<ft::MeetingPoint> meeting_;             // from the first shrink on
  uint64_t shrinkCount_ = 0;
  std::vector<int> excludedFromParent_;
  std::atomic<int> revokedBy_{-1};
  std::atomic<int> excludedBy_{-1};  // a shrink on these ranks left this one out (the watcher heard)
  std::unique_ptr<trace::CommWatcher> watcher_;  // started last, stopped first
  std::atomic<bool> aborted_{false};
  std::atomic<int> callsInFlight_{0};  // CallInFlight
  std::atomic<collResult_t> asyncError_{collSuccess};
  std::string failureMessage_;
  std::mutex failureMutex_;
};

}  // namespace coll
