#include "transport/self/self_domain.h"

#include "common/error.h"

namespace coll {
namespace transport {

SelfDomain::SelfDomain(const DomainArgs& args)
    : rank_(args.rank), depth_(args.settings->shmFifoDepth), slotBytes_(args.settings->slotBytes) {}

void SelfDomain::ensureFifo(int peer) {
  if (peer != rank_) throwError(collInternalError, "self transport: rank %d is not this rank (%d)", peer, rank_);
  if (fifo_) return;
  fifo_ = std::make_unique<SelfFifo>(depth_, slotBytes_);
  send_ = std::make_unique<SelfSendConnection>(*fifo_);
  recv_ = std::make_unique<SelfRecvConnection>(*fifo_);
}

SendConnection* SelfDomain::sendConnection(int peer) {
  ensureFifo(peer);
  return send_.get();
}

RecvConnection* SelfDomain::recvConnection(int peer) {
  ensureFifo(peer);
  return recv_.get();
}

std::unique_ptr<Domain> makeSelfDomain(const DomainArgs& args) { return std::make_unique<SelfDomain>(args); }

}  // namespace transport
}  // namespace coll
