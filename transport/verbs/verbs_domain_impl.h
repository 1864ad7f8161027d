// The verbs transport of one communicator rank: COLL_IB_QPS_PER_CONNECTION RC queue pairs per member, one completion
// queue and one registered region for all of them (every member's receive slots, send slots,
// credit words and landing mailboxes; callers' buffers are registered per call for zero-copy
// sends, verbs_caller_memory.h, and receives, verbs_landing.h), set up in one round: card() opens
// the device, makes the QPs (to INIT, receives posted) and publishes them (verbs_card.h);
// connect() takes each to RTR and RTS towards the member's QP.
//
// Completions are polled by whoever calls (the executor's connections, its idle rounds through
// progressOnce, the health check): no thread. A sleeping executor wakes every few milliseconds
// on its own (src/exec/progress.cc), which is when it sees what arrived meanwhile.
//
// Failure: every error completion fails the domain with collRemoteError naming the peer and the
// status. A dead peer is found by an 8-byte RDMA write (into a word it never reads) sent to each
// member every 200 ms while the health check runs: its QP is gone, so the write fails (retries
// exhausted). A rank that fails
// tells its members with a write with immediate; a rank that closes normally says goodbye the
// same way, so that its QP vanishing is not taken for a failure.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/domain.h"
#include "transport/verbs/verbs_connection.h"
#include "transport/verbs/verbs_queue_pair.h"

namespace coll {
namespace transport {

class VerbsDomain : public Domain, public VerbsLink, public ProgressDriver {
 public:
  VerbsDomain(const DomainArgs& args, std::shared_ptr<const VerbsApi> api);
  ~VerbsDomain() override;
  VerbsDomain(const VerbsDomain&) = delete;
  VerbsDomain& operator=(const VerbsDomain&) = delete;
  const char* name() const override { return "verbs"; }

  std::string card(int round) override;
  void connect(int round, const std::vector<std::string>& cards, Deadline deadline) override;
  void setupDone() override { ready_ = true; }
  void useDoorbell(Doorbell* bell) override { bell_ = bell; }

  SendConnection* sendConnection(int peer) override;
  RecvConnection* recvConnection(int peer) override;
  int fifoDepth() const override { return depth_; }
  std::string address() const override { return address_; }

  void checkPeers() const override;
  void announceFailure(const std::string& reason) override;

  ProgressDriver* progressDriver() override { return this; }
  void progressOnce() override;
  // kReturned: the caller-buffer registrations of the call that returned go (verbs_caller_memory.h).
  void executorState(Executor state) override;
  DomainUsage usage() const override;

  // VerbsLink
  std::mutex& mutex() override { return mutex_; }
  void pollLocked() override;
  bool postWriteLocked(VerbsPeer& peer, int lane, VerbsWork work, uint32_t slot, const void* local, uint32_t bytes,
                       uint64_t remote, const uint32_t* imm) override;
  bool postWriteFromLocked(VerbsPeer& peer, int lane, VerbsWork work, uint32_t slot, const void* local, uint32_t lkey,
                           uint32_t payloadBytes, const void* trailer, uint32_t trailerBytes, uint64_t remote,
                           uint32_t rkey, const uint32_t* imm) override;
  uint32_t regionLkey() const override { return mr_->lkey; }
  void breakPeerLocked(VerbsPeer& peer, const std::string& message) override;
  VerbsCallerMemory& callerMemory() override { return callerMemory_; }
  size_t slotBytes() const override { return settings_.slotBytes; }
  int depth() const override { return depth_; }

 private:
  struct Peer {
    VerbsPeer state;
    std::unique_ptr<VerbsSendConnection> send;
    std::unique_ptr<VerbsRecvConnection> recv;
  };
  VerbsPeer* peerOf(int rank) const;
  void makeResources();
  bool postRecvLocked(VerbsPeer& peer, int lane);
  // A data arrival with immediate `imm` on `lane`: "" when accepted, else what is wrong with it
  // (out of its window, or landed where this rank offered no landing).
  std::string acceptDataLocked(VerbsPeer& peer, int lane, uint32_t imm, uint32_t bytes);
  void completeLocked(const ibv_wc& wc);
  void arrivedLocked(VerbsPeer& peer, int lane, const ibv_wc& wc);
  void failLocked(const std::string& message);
  // The health check's work: completions, probes, credits that make no sense (lock held).
  void watchLocked();
  // Waits (polling, bounded) until `done` holds; false at the deadline or on failure.
  template <typename Done>
  bool drainLocked(Done done, Deadline deadline);
  void sayGoodbye();
  void destroyResources();

  int myRank_;
  const TransportSettings& settings_;
  std::vector<int> members_;
  int depth_;
  std::shared_ptr<const VerbsApi> api_;
  std::unique_ptr<VerbsDevice> device_;
  ibv_cq* cq_ = nullptr;
  ibv_mr* mr_ = nullptr;
  void* memory_ = nullptr;
  size_t memoryBytes_ = 0;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<int> peerIndex_;  // rank -> index in peers_, or -1
  std::string address_;
  Doorbell* bell_ = nullptr;
  bool ready_ = false;
  mutable std::mutex mutex_;
  std::atomic<bool> failed_{false};
  std::string failure_;  // under mutex_
  uint64_t arrivedAhead_ = 0;  // data that arrived before an earlier sequence number (under mutex_)
  VerbsCallerMemory callerMemory_;  // under mutex_
};

}  // namespace transport
}  // namespace coll
