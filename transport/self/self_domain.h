// The "self" transport: every rank's route to itself, whatever COLL_TRANSPORTS says. Nothing to
// publish or connect; its one FIFO is allocated at the first send to oneself. It is also the
// memory "every rank" shares when the communicator has one rank, so that the native algorithms
// (one-shot, direct reads) run there as on any host (its buffers are allocated at first use).
#pragma once

#include <memory>

#include "transport/domain.h"
#include "transport/local_memory.h"
#include "transport/self/self_connection.h"

namespace coll {
namespace transport {

class SelfDomain : public Domain, public LocalMemory {
 public:
  explicit SelfDomain(const DomainArgs& args);
  const char* name() const override { return "self"; }

  int setupRounds() const override { return 0; }
  std::string card(int) override { return ""; }
  void connect(int, const std::vector<std::string>&, Deadline) override {}

  SendConnection* sendConnection(int peer) override;
  RecvConnection* recvConnection(int peer) override;
  int fifoDepth() const override { return depth_; }

  void checkPeers() const override {}
  void announceFailure(const std::string&) override {}

  LocalMemory* localMemory() override { return this; }
  const std::vector<int>& localRanks() const override { return ranks_; }
  NativeArea* area(int rank) const override;
  uint8_t* oneshotBuffer(int rank, int which) const override;
  void ringPeers() const override {}
  bool crossMemoryReads() const override { return true; }  // its own memory
  void readMemory(int rank, uint64_t address, void* local, size_t bytes) const override;
  void writeMemory(int rank, uint64_t address, const void* local, size_t bytes) const override;

 private:
  // Throws collInternalError unless `rank` is this rank: the only one the domain reaches.
  void requireSelf(int rank) const;
  void ensureFifo(int peer);

  int rank_;
  std::vector<int> ranks_;  // {rank_}
  int depth_;
  size_t slotBytes_;
  size_t oneshotBytes_;
  mutable NativeArea area_;
  mutable std::unique_ptr<uint8_t[]> oneshot_;  // two buffers of oneshotBytes_
  std::unique_ptr<SelfFifo> fifo_;
  std::unique_ptr<SelfSendConnection> send_;
  std::unique_ptr<SelfRecvConnection> recv_;
};

std::unique_ptr<Domain> makeSelfDomain(const DomainArgs& args);

}  // namespace transport
}  // namespace coll
