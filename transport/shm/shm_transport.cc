#include "transport/shm/shm_transport.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "common/hash.h"
#include "common/logging.h"

namespace coll {
namespace transport {
namespace {

constexpr size_t roundUp(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

constexpr size_t kHeaderBytes = roundUp(sizeof(ShmRankHeader), 4096);

uint64_t layoutSignatureOf(const ShmConfig& config, size_t nlocal) {
  return Fnv1a()
      .add(static_cast<uint64_t>(config.fifoDepth))
      .add(static_cast<uint64_t>(config.slotBytes))
      .add(static_cast<uint64_t>(config.oneshotBytes))
      .add(static_cast<uint64_t>(nlocal))
      .value();
}

// One FIFO as both ends see it: the counters, the slot sizes and the slots, all in the
// receiver's segment, plus the doorbell of the end to wake.
struct FifoView {
  FifoView(uint8_t* fifo, const ShmConfig& config, Doorbell* otherEnd)
      : header(reinterpret_cast<ShmFifoHeader*>(fifo)),
        sizes(reinterpret_cast<uint64_t*>(fifo + sizeof(ShmFifoHeader))),
        data(fifo + sizeof(ShmFifoHeader) + roundUp(sizeof(uint64_t) * config.fifoDepth, 64)),
        slotBytes(config.slotBytes),
        depth(config.fifoDepth),
        bell(otherEnd) {}
  uint8_t* slot(uint64_t index) const { return data + (index % depth) * slotBytes; }

  ShmFifoHeader* header;
  uint64_t* sizes;
  uint8_t* data;
  size_t slotBytes;
  int depth;
  Doorbell* bell;
};

class ShmSendConnection : public SendConnection {
 public:
  ShmSendConnection(uint8_t* fifo, const ShmConfig& config, Doorbell* receiverBell)
      : fifo_(fifo, config, receiverBell), head_(fifo_.header->head.load(std::memory_order_relaxed)) {}

  void* tryAcquire() override {
    if (head_ - fifo_.header->tail.load(std::memory_order_acquire) >= static_cast<uint64_t>(fifo_.depth))
      return nullptr;
    return fifo_.slot(head_);
  }
  void post(size_t bytes) override {
    fifo_.sizes[head_ % fifo_.depth] = bytes;
    ++head_;
    fifo_.header->head.store(head_, std::memory_order_release);
    ringDoorbell(fifo_.bell);
  }
  size_t slotBytes() const override { return fifo_.slotBytes; }
  int depth() const override { return fifo_.depth; }

 private:
  FifoView fifo_;
  uint64_t head_;
};

class ShmRecvConnection : public RecvConnection {
 public:
  ShmRecvConnection(uint8_t* fifo, const ShmConfig& config, Doorbell* senderBell)
      : fifo_(fifo, config, senderBell), tail_(fifo_.header->tail.load(std::memory_order_relaxed)) {}

  const void* tryPeek(size_t* bytes) override {
    if (fifo_.header->head.load(std::memory_order_acquire) <= tail_) return nullptr;
    // The size comes from another process: clamp it so a corrupt value cannot make a reader run
    // past the slot; the executor then reports the mismatch.
    *bytes = std::min<uint64_t>(fifo_.sizes[tail_ % fifo_.depth], fifo_.slotBytes + 1);
    return fifo_.slot(tail_);
  }
  void release() override {
    ++tail_;
    fifo_.header->tail.store(tail_, std::memory_order_release);
    ringDoorbell(fifo_.bell);
  }
  size_t slotBytes() const override { return fifo_.slotBytes; }

 private:
  FifoView fifo_;
  uint64_t tail_;
};

int openPidfd(int pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

}  // namespace

ShmDomain::ShmDomain(const ShmConfig& config, int myRank, std::vector<int> localRanks)
    : config_(config), myRank_(myRank), localRanks_(std::move(localRanks)) {
  myLocal_ = localIndexOf(myRank);
  if (myLocal_ < 0) throwError(collInternalError, "ShmDomain: rank %d is not among its host's ranks", myRank);
  own_ = ShmSegment::create(segmentBytes(), config_.anonymousSegments);
  auto* header = new (own_.data()) ShmRankHeader();
  header->layoutSignature = layoutSignatureOf(config_, localRanks_.size());
  header->pid = static_cast<int32_t>(getpid());
  for (int sender = 0; sender < localCount(); ++sender) new (fifoBase(-1, sender)) ShmFifoHeader();
}

ShmDomain::~ShmDomain() {
  if (myLocal_ >= 0 && !headers_.empty()) myHeader()->departed.store(1, std::memory_order_release);
  for (int fd : pidfds_)
    if (fd >= 0) close(fd);
}

int ShmDomain::localIndexOf(int rank) const {
  auto it = std::lower_bound(localRanks_.begin(), localRanks_.end(), rank);
  if (it == localRanks_.end() || *it != rank) return -1;
  return static_cast<int>(it - localRanks_.begin());
}

size_t ShmDomain::fifoBytes() const {
  return sizeof(ShmFifoHeader) + roundUp(sizeof(uint64_t) * config_.fifoDepth, 64) +
         config_.slotBytes * static_cast<size_t>(config_.fifoDepth);
}

size_t ShmDomain::segmentBytes() const {
  return kHeaderBytes + 2 * roundUp(config_.oneshotBytes, 4096) + roundUp(fifoBytes(), 4096) * localRanks_.size();
}

uint8_t* ShmDomain::oneshotBuffer(int localIndex, int which) const {
  return reinterpret_cast<uint8_t*>(headers_[localIndex]) + kHeaderBytes +
         static_cast<size_t>(which) * roundUp(config_.oneshotBytes, 4096);
}

// receiverLocal == -1 means our own segment before attach() filled headers_.
uint8_t* ShmDomain::fifoBase(int receiverLocal, int senderLocal) const {
  uint8_t* base =
      receiverLocal < 0 ? static_cast<uint8_t*>(own_.data()) : reinterpret_cast<uint8_t*>(headers_[receiverLocal]);
  return base + kHeaderBytes + 2 * roundUp(config_.oneshotBytes, 4096) +
         roundUp(fifoBytes(), 4096) * static_cast<size_t>(senderLocal);
}

void ShmDomain::attach(const std::vector<std::string>& blobs) {
  if (blobs.size() != localRanks_.size())
    throwError(collInternalError, "ShmDomain::attach: %zu blobs for %zu local ranks", blobs.size(), localRanks_.size());
  peers_.resize(blobs.size());
  headers_.assign(blobs.size(), nullptr);
  pidfds_.assign(blobs.size(), -1);
  uint64_t expected = layoutSignatureOf(config_, localRanks_.size());
  for (int i = 0; i < localCount(); ++i) {
    if (i == myLocal_) {
      headers_[i] = static_cast<ShmRankHeader*>(own_.data());
      continue;
    }
    peers_[i] = ShmSegment::open(blobs[i], segmentBytes());
    headers_[i] = static_cast<ShmRankHeader*>(peers_[i].data());
    if (headers_[i]->layoutSignature != expected)
      throwError(collInvalidUsage,
                 "shared-memory layout of rank %d differs from rank %d's: every rank must use the same "
                 "COLL_SHM_* settings",
                 localRanks_[i], myRank_);
    int pid = headers_[i]->pid;
    if (pid > 0 && pid != getpid()) {
      pidfds_[i] = openPidfd(pid);
      if (pidfds_[i] < 0)
        COLL_INFO(kTransport, "pidfd_open(%d) failed; rank %d's death is found by timeout", pid, localRanks_[i]);
    }
  }
}

std::unique_ptr<SendConnection> ShmDomain::connectSend(int peerRank) {
  int peer = localIndexOf(peerRank);
  if (peer < 0) throwError(collInternalError, "shm: rank %d is not on this host", peerRank);
  return std::make_unique<ShmSendConnection>(fifoBase(peer, myLocal_), config_, &headers_[peer]->doorbell);
}

std::unique_ptr<RecvConnection> ShmDomain::connectRecv(int peerRank) {
  int peer = localIndexOf(peerRank);
  if (peer < 0) throwError(collInternalError, "shm: rank %d is not on this host", peerRank);
  return std::make_unique<ShmRecvConnection>(fifoBase(myLocal_, peer), config_, &headers_[peer]->doorbell);
}

void ShmDomain::ringPeers() const {
  for (int i = 0; i < localCount(); ++i)
    if (i != myLocal_) ringDoorbell(&headers_[i]->doorbell);
}

void ShmDomain::announceFailure(const std::string& reason) {
  ShmRankHeader* me = myHeader();
  if (me == nullptr) return;
  if (me->failed.load() == 0) {
    snprintf(me->failReason, sizeof(me->failReason), "%s", reason.c_str());
    me->failed.store(1, std::memory_order_release);
  }
  for (ShmRankHeader* h : headers_)
    if (h != nullptr) forceRingDoorbell(&h->doorbell);
}

void ShmDomain::checkPeers() const {
  for (int i = 0; i < static_cast<int>(headers_.size()); ++i) {
    if (i == myLocal_ || headers_[i] == nullptr) continue;
    if (headers_[i]->failed.load(std::memory_order_acquire) != 0) {
      char reason[sizeof(headers_[i]->failReason)];
      memcpy(reason, headers_[i]->failReason, sizeof(reason));
      reason[sizeof(reason) - 1] = '\0';
      throwError(collRemoteError, "rank %d failed: %s", localRanks_[i], reason);
    }
    // A rank that destroyed its communicator and then exited finished every call it shared with
    // us; only an exit without that is a death.
    if (pidfds_[i] >= 0 && headers_[i]->departed.load(std::memory_order_acquire) == 0) {
      struct pollfd pfd = {pidfds_[i], POLLIN, 0};
      if (poll(&pfd, 1, 0) > 0)
        throwError(collRemoteError, "rank %d (pid %d) exited while this rank was waiting for it", localRanks_[i],
                   headers_[i]->pid);
    }
  }
}

}  // namespace transport
}  // namespace coll
