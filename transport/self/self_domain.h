// The "self" transport: every rank's route to itself, whatever COLL_TRANSPORTS says. Nothing to
// publish or connect; its one FIFO is allocated at the first send to oneself.
#pragma once

#include <memory>

#include "transport/domain.h"
#include "transport/self/self_connection.h"

namespace coll {
namespace transport {

class SelfDomain : public Domain {
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

 private:
  void ensureFifo(int peer);

  int rank_;
  int depth_;
  size_t slotBytes_;
  std::unique_ptr<SelfFifo> fifo_;
  std::unique_ptr<SelfSendConnection> send_;
  std::unique_ptr<SelfRecvConnection> recv_;
};

std::unique_ptr<Domain> makeSelfDomain(const DomainArgs& args);

}  // namespace transport
}  // namespace coll
