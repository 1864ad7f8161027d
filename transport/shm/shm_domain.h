// Shared memory between the ranks of one communicator that run on one host.
//
// Each rank creates one segment that holds everything written *to* it: its doorbell, its health
// word, the native algorithms' area (transport/local_memory.h) and two one-shot buffers, and room
// for one receive FIFO per other local rank (shm_connection.h). A sender maps the receiver's
// segment and writes into its FIFO there; the receiver releases slots by advancing the tail in
// its own segment. Every local rank maps every local segment, so any rank can ring any doorbell,
// read any one-shot buffer and watch any peer's health word.
//
// Only the header and the one-shot buffers get memory when the segment is made. A FIFO's pages
// are allocated when a connection over it is first made, by whichever end comes first (both may:
// allocating is idempotent, and a FIFO of all-zero bytes is a valid empty FIFO, so no one has to
// initialise it). A rank's memory thus grows with the peers its plans use, not with the number
// of local ranks: at 128 ranks a ring costs 2 FIFOs per rank where every pair cost 127.
//
// Health: every check reads every local rank's failure word (memory, no system call), polls the
// pidfds of the peers this rank has connections to (one poll() for all of them), and looks at one
// more local rank in turn, so that a native algorithm waiting on any rank still learns of its
// death within a sweep of the host's ranks. Pidfds are opened for connected peers only. Where
// the kernel refuses pidfds (before 5.3, seccomp, valgrind) the sweep alone finds a death, by
// kill(pid, 0) and the process's state in /proc.
//
// Setup (transport/domain.h) takes two rounds. Round 0: each rank says whether it may read every
// local peer's memory (cross-memory attach), and whether its kernel lets it take another
// process's file descriptor (pidfd_getfd, which the same permission allows). When all of them
// may do both, segments are anonymous memfds handed over with pidfd_getfd: they have no name at
// all and vanish with the last process, even one killed during init. Otherwise (an older kernel,
// a seccomp profile, valgrind) they are named and unlinked once mapped (setupDone). Round 1:
// each rank publishes its segment and maps the others'.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/fd.h"
#include "transport/domain.h"
#include "transport/local_memory.h"
#include "transport/shm/shm_connection.h"
#include "transport/shm/shm_segment.h"

namespace coll {
namespace transport {

// The first bytes of every rank's segment.
struct alignas(64) ShmRankHeader {
  Doorbell doorbell;
  NativeArea native;
  alignas(64) std::atomic<uint32_t> failed{0};  // set when this rank's communicator failed
  char failReason[444];  // room for a timeout naming the ranks to blame, or a message naming two calls
  // Set when this rank destroyed its communicator normally: its process may then exit without
  // that being a failure, since it owes its peers nothing more.
  std::atomic<uint32_t> departed{0};
  alignas(64) uint64_t layoutSignature = 0;  // identical on every rank, or the layouts differ
  int32_t pid = 0;
};

class ShmDomain : public Domain, public LocalMemory {
 public:
  explicit ShmDomain(const DomainArgs& args);
  ~ShmDomain() override;
  const char* name() const override { return "shm"; }

  int setupRounds() const override { return 2; }
  std::string card(int round) override;
  void connect(int round, const std::vector<std::string>& cards, Deadline deadline) override;
  void setupDone() override;

  SendConnection* sendConnection(int peer) override;
  RecvConnection* recvConnection(int peer) override;
  int fifoDepth() const override { return fifoDepth_; }

  void checkPeers() const override;
  void announceFailure(const std::string& reason) override;
  std::string describeStall(uint64_t collective, int64_t quietNs) const override;
  DomainUsage usage() const override;

  Doorbell* sharedDoorbell() override;
  LocalMemory* localMemory() override { return hasPeers() ? this : nullptr; }

  // LocalMemory: indexed by rank, for communicators whose ranks all share this host.
  const std::vector<int>& localRanks() const override { return localRanks_; }
  NativeArea* area(int rank) const override { return &headerOf(rank)->native; }
  uint8_t* oneshotBuffer(int rank, int which) const override;
  void ringPeers() const override;
  bool crossMemoryReads() const override { return crossMemoryReads_; }
  void readMemory(int rank, uint64_t address, void* local, size_t bytes) const override;
  void writeMemory(int rank, uint64_t address, const void* local, size_t bytes) const override;

 private:
  bool hasPeers() const { return localRanks_.size() > 1; }
  int localIndexOf(int rank) const;  // -1 when rank is not on this host
  int peerIndex(int peer) const;     // local index of a connected peer; throws otherwise
  ShmRankHeader* headerOf(int rank) const;
  size_t segmentBytes() const;
  size_t oneshotStride() const;   // a one-shot buffer with its trailer room, in whole pages
  size_t fifoAreaOffset() const;  // where the FIFOs begin: everything before is allocated at once
  size_t fifoStride() const;
  // The FIFO in receiverLocal's segment that senderLocal writes into, its memory allocated.
  uint8_t* fifoOf(int receiverLocal, int senderLocal);
  bool probePeers() const;
  void createSegment(bool anonymous);
  void attach(const std::vector<std::string>& locators);
  // From now on every health check polls this peer's process (connection made). Caller holds
  // connectionMutex_.
  void watch(int local);
  // Throws when the process of local rank `local` exited without departing; `pidfd` is open on it.
  void throwIfExited(int local, int pidfd) const;
  // One local rank, in turn: a native algorithm may wait on a rank this one has no connection to.
  void sweepOnePeer() const;

  int myRank_;
  int fifoDepth_;
  size_t slotBytes_;
  size_t singleCopyBytes_;     // COLL_SHM_SINGLE_COPY_BYTES, used where cross-memory reads work
  size_t singleCopyMaxBytes_;  // COLL_SHM_SINGLE_COPY_MAX_BYTES
  bool singleCopyWindow_;      // single copies inside the window (TransportSettings::singleCopyWindow)
  size_t oneshotBytes_;
  bool namedSegments_;
  const std::vector<PeerInfo>& peers_;
  std::vector<int> localRanks_;  // the members and this rank, ascending
  int myLocal_ = -1;
  bool canReadPeers_ = false;      // this rank's verdict
  bool crossMemoryReads_ = false;  // every local rank's
  ShmSegment own_;
  std::vector<ShmSegment> mapped_;  // indexed by local index; own slot empty
  std::vector<ShmRankHeader*> headers_;
  std::vector<std::unique_ptr<ShmSendConnection>> sends_;  // per local index, made at first use
  std::vector<std::unique_ptr<ShmRecvConnection>> recvs_;
  // Connections are made by the executor while the user's thread may check health or read usage.
  mutable std::mutex connectionMutex_;
  std::vector<Fd> watchedPidfds_;   // of connected peers in other processes
  std::vector<int> watchedLocals_;  // their local indices, in the same order
  std::vector<uint8_t> isWatched_;  // per local index
  mutable std::atomic<uint32_t> sweepNext_{0};
};

std::unique_ptr<Domain> makeShmDomain(const DomainArgs& args);

}  // namespace transport
}  // namespace coll
