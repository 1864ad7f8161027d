#include "transport/shm/shm_domain.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/clock.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/logging.h"
#include "transport/shm/cross_memory.h"
#include "transport/shm/shm_card.h"

namespace coll {
namespace transport {
namespace {

constexpr size_t roundUp(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

constexpr size_t kHeaderBytes = roundUp(sizeof(ShmRankHeader), 4096);

uint64_t layoutSignatureOf(int depth, size_t slotBytes, size_t oneshotBytes, size_t nlocal) {
  return Fnv1a()
      .add(static_cast<uint64_t>(depth))
      .add(static_cast<uint64_t>(slotBytes))
      .add(static_cast<uint64_t>(oneshotBytes))
      .add(static_cast<uint64_t>(nlocal))
      .value();
}

int openPidfd(int pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

// The state letter of process `pid` from /proc ('R', 'S', 'T' stopped, 'Z' zombie...), or '\0'
// when it cannot be read ('?' when there is no such process).
char processState(int pid) {
  char path[48];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* file = fopen(path, "re");
  if (file == nullptr) return errno == ENOENT ? '?' : '\0';
  char stat[512];
  size_t bytes = fread(stat, 1, sizeof(stat) - 1, file);
  fclose(file);
  stat[bytes] = '\0';
  // "pid (name) state ...": the name may hold spaces and parentheses, so the state follows the
  // last ')'.
  const char* nameEnd = strrchr(stat, ')');
  return nameEnd != nullptr && nameEnd[1] == ' ' ? nameEnd[2] : '\0';
}

// Whether process `pid` has ended, where pidfds are refused (Linux before 5.3, a seccomp profile,
// valgrind): no such process any more, or a zombie its parent has not reaped yet. A pid can be
// reused once reaped, which is why a pidfd is asked for first.
bool processEnded(int pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  const char state = processState(pid);
  return state == '?' || state == 'Z' || state == 'X';
}

// What a timeout's message says of a peer's process, by its state ("" when nothing useful).
std::string processNote(int pid) {
  if (pid <= 0 || pid == getpid()) return "";
  switch (processState(pid)) {
    case 'T':
      return ": its process is stopped (SIGSTOP, or a terminal's Ctrl-Z)";
    case 't':
      return ": its process is stopped by a debugger";
    case 'D':
      return ": its process is in an uninterruptible wait (disk or kernel)";
    case 'Z':
    case 'X':
    case '?':
      return ": its process has exited";
    default:
      return "";
  }
}

}  // namespace

ShmDomain::ShmDomain(const DomainArgs& args)
    : myRank_(args.rank),
      fifoDepth_(args.settings->shmFifoDepth),
      slotBytes_(args.settings->slotBytes),
      singleCopyBytes_(args.settings->singleCopyBytes),
      singleCopyMaxBytes_(args.settings->singleCopyMaxBytes),
      singleCopyWindow_(args.settings->singleCopyWindow),
      oneshotBytes_(args.settings->oneshotBytes),
      namedSegments_(args.settings->shmNamedSegments),
      peers_(*args.peers),
      localRanks_(args.members) {
  localRanks_.push_back(myRank_);
  std::sort(localRanks_.begin(), localRanks_.end());
  myLocal_ = localIndexOf(myRank_);
  canReadPeers_ = probePeers();
}

ShmDomain::~ShmDomain() {
  if (myLocal_ >= 0 && !headers_.empty()) headers_[myLocal_]->departed.store(1, std::memory_order_release);
}

bool ShmDomain::probePeers() const {
  bool ok = true;
  for (int r : localRanks_) {
    if (r == myRank_) continue;
    const PeerInfo& peer = peers_[r];
    if (!probeCrossMemory(peer.pid, peer.memoryProbeAddress, &peer.memoryProbeValue, sizeof(peer.memoryProbeValue))) {
      COLL_INFO(kInit, "rank %d cannot read rank %d's memory (pid %d): large messages use the FIFO ring", myRank_, r,
                peer.pid);
      ok = false;
    }
  }
  return ok;
}

std::string ShmDomain::card(int round) {
  if (!hasPeers()) return "";
  if (round != 0) return makeShmSegmentCard(own_.locator());
  ShmVerdict verdict;
  verdict.canReadPeers = canReadPeers_;
  verdict.canTakeDescriptors = ShmSegment::canTakePeerDescriptors();
  return makeShmVerdictCard(verdict);
}

void ShmDomain::connect(int round, const std::vector<std::string>& cards, Deadline) {
  if (!hasPeers()) return;
  if (round == 0) {
    crossMemoryReads_ = true;
    bool everyRankTakes = true;
    for (int r : localRanks_) {
      const ShmVerdict verdict = parseShmVerdictCard(cards.at(r), r);
      crossMemoryReads_ = crossMemoryReads_ && verdict.canReadPeers;
      everyRankTakes = everyRankTakes && verdict.canTakeDescriptors;
    }
    if (crossMemoryReads_ && !everyRankTakes && !namedSegments_)
      COLL_INFO(kInit,
                "rank %d: a rank on this host cannot take others' descriptors (pidfd_getfd: Linux 5.6 or later, "
                "refused by seccomp or a tool such as valgrind): shared memory uses named segments",
                myRank_);
    createSegment(crossMemoryReads_ && everyRankTakes && !namedSegments_);
    return;
  }
  std::vector<std::string> locators;
  for (int r : localRanks_) locators.push_back(r == myRank_ ? std::string() : parseShmSegmentCard(cards.at(r), r));
  attach(locators);
  COLL_INFO(kInit, "rank %d: %d rank(s) on this host share memory; cross-memory reads %s", myRank_,
            static_cast<int>(localRanks_.size()), crossMemoryReads_ ? "available" : "unavailable");
}

void ShmDomain::setupDone() { own_.releaseLocator(); }

int ShmDomain::localIndexOf(int rank) const {
  auto it = std::lower_bound(localRanks_.begin(), localRanks_.end(), rank);
  if (it == localRanks_.end() || *it != rank) return -1;
  return static_cast<int>(it - localRanks_.begin());
}

ShmRankHeader* ShmDomain::headerOf(int rank) const {
  int local = localIndexOf(rank);
  if (local < 0 || headers_.empty()) throwError(collInternalError, "shm: rank %d is not on this host", rank);
  return headers_[local];
}

size_t ShmDomain::oneshotStride() const { return roundUp(oneshotBytes_ + kOneshotTrailerRoom, 4096); }

size_t ShmDomain::fifoAreaOffset() const { return kHeaderBytes + 2 * oneshotStride(); }

size_t ShmDomain::fifoStride() const { return roundUp(shmFifoBytes(fifoDepth_, slotBytes_), 4096); }

size_t ShmDomain::segmentBytes() const { return fifoAreaOffset() + fifoStride() * (localRanks_.size() - 1); }

uint8_t* ShmDomain::oneshotBuffer(int rank, int which) const {
  return reinterpret_cast<uint8_t*>(headerOf(rank)) + kHeaderBytes + static_cast<size_t>(which) * oneshotStride();
}

// No one initialises a FIFO: its pages come from the kernel zero-filled when the first end
// allocates them, and all-zero bytes are an empty FIFO (head == tail == 0, no sizes).
static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t) && std::atomic<uint64_t>::is_always_lock_free,
              "a FIFO counter of zero bytes must be the atomic value 0");

uint8_t* ShmDomain::fifoOf(int receiverLocal, int senderLocal) {
  // A segment holds FIFOs from the other local ranks only: a rank's sends to itself take the
  // "self" transport.
  size_t index = static_cast<size_t>(senderLocal - (senderLocal > receiverLocal ? 1 : 0));
  size_t offset = fifoAreaOffset() + fifoStride() * index;
  const ShmSegment& segment = receiverLocal == myLocal_ ? own_ : mapped_[receiverLocal];
  std::string what =
      formatString("the FIFO from rank %d to rank %d", localRanks_[senderLocal], localRanks_[receiverLocal]);
  segment.allocate(offset, fifoStride(), what.c_str());
  return static_cast<uint8_t*>(segment.data()) + offset;
}

void ShmDomain::createSegment(bool anonymous) {
  own_ = ShmSegment::create(segmentBytes(), fifoAreaOffset(), anonymous);
  auto* header = new (own_.data()) ShmRankHeader();
  header->layoutSignature = layoutSignatureOf(fifoDepth_, slotBytes_, oneshotBytes_, localRanks_.size());
  header->pid = static_cast<int32_t>(getpid());
}

void ShmDomain::attach(const std::vector<std::string>& locators) {
  const int nlocal = static_cast<int>(localRanks_.size());
  mapped_.resize(nlocal);
  headers_.assign(nlocal, nullptr);
  sends_.resize(nlocal);
  recvs_.resize(nlocal);
  isWatched_.assign(nlocal, 0);
  uint64_t expected = layoutSignatureOf(fifoDepth_, slotBytes_, oneshotBytes_, localRanks_.size());
  for (int i = 0; i < nlocal; ++i) {
    if (i == myLocal_) {
      headers_[i] = static_cast<ShmRankHeader*>(own_.data());
      continue;
    }
    mapped_[i] = ShmSegment::open(locators[i], segmentBytes());
    headers_[i] = static_cast<ShmRankHeader*>(mapped_[i].data());
    if (headers_[i]->layoutSignature != expected)
      throwError(collInvalidUsage,
                 "shared-memory layout of rank %d differs from rank %d's: every rank must use the same "
                 "COLL_SHM_* settings",
                 localRanks_[i], myRank_);
  }
}

Doorbell* ShmDomain::sharedDoorbell() {
  return own_.data() != nullptr ? &static_cast<ShmRankHeader*>(own_.data())->doorbell : nullptr;
}

int ShmDomain::peerIndex(int peer) const {
  int local = localIndexOf(peer);
  if (local < 0 || local == myLocal_ || headers_.empty())
    throwError(collInternalError, "shm: no connection to rank %d", peer);
  return local;
}

// Both directions live in the receiver's segment: this rank's FIFO there for sends, the peer's
// FIFO here for receives; either end rings the other's doorbell. Nothing here waits for the peer:
// the FIFO is usable as soon as its memory is allocated, whichever end does that first.
SendConnection* ShmDomain::sendConnection(int peer) {
  int local = peerIndex(peer);
  std::lock_guard<std::mutex> lock(connectionMutex_);
  if (!sends_[local]) {
    sends_[local] = std::make_unique<ShmSendConnection>(
        fifoOf(local, myLocal_), fifoDepth_, slotBytes_, &headers_[local]->doorbell,
        crossMemoryReads_ ? singleCopyBytes_ : 0, singleCopyMaxBytes_, singleCopyWindow_);
    watch(local);
  }
  return sends_[local].get();
}

RecvConnection* ShmDomain::recvConnection(int peer) {
  int local = peerIndex(peer);
  std::lock_guard<std::mutex> lock(connectionMutex_);
  if (!recvs_[local]) {
    recvs_[local] = std::make_unique<ShmRecvConnection>(fifoOf(myLocal_, local), fifoDepth_, slotBytes_,
                                                        &headers_[local]->doorbell, headers_[local]->pid);
    watch(local);
  }
  return recvs_[local].get();
}

void ShmDomain::watch(int local) {
  int pid = headers_[local]->pid;
  if (isWatched_[local] || pid <= 0 || pid == getpid()) return;
  isWatched_[local] = 1;
  Fd pidfd(openPidfd(pid));
  if (!pidfd.valid()) {
    COLL_INFO(kTransport,
              "pidfd_open(%d) failed (%s); rank %d's death is found by the sweep of this host's ranks "
              "(kill(pid, 0) and /proc/pid/stat)",
              pid, strerror(errno), localRanks_[local]);
    return;
  }
  watchedPidfds_.push_back(std::move(pidfd));
  watchedLocals_.push_back(local);
}

DomainUsage ShmDomain::usage() const {
  DomainUsage usage;
  usage.resourceKind = "FIFOs";
  uint64_t inPlace = 0, singleCopies = 0;
  std::lock_guard<std::mutex> lock(connectionMutex_);
  for (size_t i = 0; i < sends_.size(); ++i) {
    if (sends_[i]) usage.sendPeers.push_back(localRanks_[i]);
    if (!recvs_[i]) continue;
    usage.recvPeers.push_back(localRanks_[i]);
    inPlace += recvs_[i]->receivedInPlace();
    singleCopies += recvs_[i]->singleCopyReads();
  }
  usage.counts.push_back({kReceivedInPlace, inPlace});
  usage.counts.push_back({kSingleCopyReads, singleCopies});
  usage.resources = static_cast<int>(usage.sendPeers.size() + usage.recvPeers.size());
  return usage;
}

void ShmDomain::ringPeers() const {
  for (int i = 0; i < static_cast<int>(headers_.size()); ++i)
    if (i != myLocal_) ringDoorbell(&headers_[i]->doorbell);
}

void ShmDomain::readMemory(int rank, uint64_t address, void* local, size_t bytes) const {
  readPeerMemory(headerOf(rank)->pid, address, local, bytes);
}

void ShmDomain::writeMemory(int rank, uint64_t address, const void* local, size_t bytes) const {
  writePeerMemory(headerOf(rank)->pid, address, local, bytes);
}

void ShmDomain::announceFailure(const std::string& reason) {
  if (headers_.empty()) return;
  ShmRankHeader* me = headers_[myLocal_];
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
  }
  if (headers_.empty()) return;
  {
    std::lock_guard<std::mutex> lock(connectionMutex_);
    if (!watchedPidfds_.empty()) {
      // One system call for every connected peer, however many there are.
      pollfd fds[64];
      for (size_t first = 0; first < watchedPidfds_.size(); first += 64) {
        size_t count = std::min<size_t>(64, watchedPidfds_.size() - first);
        for (size_t k = 0; k < count; ++k) fds[k] = {watchedPidfds_[first + k].get(), POLLIN, 0};
        if (poll(fds, count, 0) <= 0) continue;
        for (size_t k = 0; k < count; ++k)
          if (fds[k].revents != 0) throwIfExited(watchedLocals_[first + k], fds[k].fd);
      }
    }
  }
  sweepOnePeer();
}

std::string ShmDomain::describeStall(uint64_t collective, int64_t quietNs) const {
  const int64_t now = monotonicNs();
  std::string blame;
  int named = 0, more = 0;
  for (int i = 0; i < static_cast<int>(headers_.size()); ++i) {
    if (i == myLocal_ || headers_[i] == nullptr) continue;
    const RankActivity& activity = headers_[i]->doorbell.activity;
    const uint64_t begun = activity.collectivesBegun.load(std::memory_order_relaxed);
    const int64_t quietFor = now - activity.waitingAtNs.load(std::memory_order_relaxed);
    std::string why;
    if (begun < collective) {
      why = formatString("has not begun this collective (it has begun %llu; this is collective %llu)",
                         static_cast<unsigned long long>(begun), static_cast<unsigned long long>(collective));
    } else if (begun == collective && quietFor > quietNs) {
      why = formatString("is in this collective but has not waited on anything for %.1f s", quietFor * 1e-9);
    } else {
      continue;
    }
    if (named == 3) {
      ++more;
      continue;
    }
    const int pid = headers_[i]->pid;
    blame += formatString("%srank %d (pid %d) %s%s", named++ > 0 ? "; " : "", localRanks_[i], pid, why.c_str(),
                          processNote(pid).c_str());
  }
  if (more > 0) blame += formatString("; and %d more such rank(s) on this host", more);
  return blame;
}

void ShmDomain::throwIfExited(int local, int pidfd) const {
  // A rank that destroyed its communicator and then exited finished every call it shared with
  // us; only an exit without that is a death.
  if (headers_[local]->departed.load(std::memory_order_acquire) != 0) return;
  if (pidfd >= 0) {
    struct pollfd pfd = {pidfd, POLLIN, 0};
    if (poll(&pfd, 1, 0) <= 0) return;
  }
  throwError(collRemoteError, "rank %d (pid %d) exited while this rank was waiting for it", localRanks_[local],
             headers_[local]->pid);
}

void ShmDomain::sweepOnePeer() const {
  const uint32_t nlocal = static_cast<uint32_t>(headers_.size());
  if (nlocal < 2) return;
  int local = static_cast<int>(sweepNext_.fetch_add(1, std::memory_order_relaxed) % nlocal);
  int pid = headers_[local]->pid;
  if (local == myLocal_ || pid <= 0 || pid == getpid() || headers_[local]->departed.load(std::memory_order_acquire))
    return;
  const int fd = openPidfd(pid);
  const int error = errno;
  Fd pidfd(fd);
  if (pidfd.valid()) {
    throwIfExited(local, pidfd.get());  // an exited process not yet reaped polls ready
    return;
  }
  // ESRCH: no such process any more, it exited and was reaped. Any other error: no pidfds here.
  if (error == ESRCH || processEnded(pid)) throwIfExited(local, -1);
}

std::unique_ptr<Domain> makeShmDomain(const DomainArgs& args) { return std::make_unique<ShmDomain>(args); }

}  // namespace transport
}  // namespace coll
