#include "transport/self/self_domain.h"

#include <cstring>

#include "common/error.h"

namespace coll {
namespace transport {

SelfDomain::SelfDomain(const DomainArgs& args)
    : rank_(args.rank),
      ranks_{args.rank},
      depth_(args.settings->shmFifoDepth),
      slotBytes_(args.settings->slotBytes),
      oneshotBytes_(args.settings->oneshotBytes) {}

void SelfDomain::requireSelf(int rank) const {
  if (rank != rank_) throwError(collInternalError, "self transport: rank %d is not this rank (%d)", rank, rank_);
}

void SelfDomain::ensureFifo(int peer) {
  requireSelf(peer);
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

NativeArea* SelfDomain::area(int rank) const {
  requireSelf(rank);
  return &area_;
}

uint8_t* SelfDomain::oneshotBuffer(int rank, int which) const {
  requireSelf(rank);
  if (!oneshot_) oneshot_.reset(new uint8_t[2 * oneshotBytes_]);
  return oneshot_.get() + static_cast<size_t>(which) * oneshotBytes_;
}

void SelfDomain::readMemory(int rank, uint64_t address, void* local, size_t bytes) const {
  requireSelf(rank);
  memcpy(local, reinterpret_cast<const void*>(address), bytes);
}

void SelfDomain::writeMemory(int rank, uint64_t address, const void* local, size_t bytes) const {
  requireSelf(rank);
  memcpy(reinterpret_cast<void*>(address), local, bytes);
}

std::unique_ptr<Domain> makeSelfDomain(const DomainArgs& args) { return std::make_unique<SelfDomain>(args); }

}  // namespace transport
}  // namespace coll
