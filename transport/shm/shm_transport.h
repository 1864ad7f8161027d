// Shared memory between the ranks of one communicator that run on one host.
//
// Each rank creates one segment that holds everything written *to* it: its doorbell, its health
// word, the area where it publishes small inputs for the one-shot path, and one receive FIFO per
// local rank (itself included, so that a rank can send to itself). A sender maps the receiver's
// segment and writes into its FIFO there; the receiver releases slots by advancing the tail in
// its own segment. Every local rank maps every local segment, so any rank can ring any doorbell,
// read any one-shot area and watch any peer's health word.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/doorbell.h"
#include "transport/shm/shm_segment.h"
#include "transport/transport.h"

namespace coll {
namespace transport {

struct ShmConfig {
  int fifoDepth = 8;               // slots per FIFO
  size_t slotBytes = 128 << 10;    // bytes per slot
  size_t oneshotBytes = 64 << 10;  // bytes per one-shot buffer (two per rank)
  bool anonymousSegments = false;  // memfd + pidfd_getfd instead of named segments
};

// The first bytes of every rank's segment.
struct alignas(64) ShmRankHeader {
  Doorbell doorbell;
  alignas(64) std::atomic<uint64_t> oneshotSeq{0};  // last one-shot call whose input is published
  // The direct-read path (src/direct_read.h): where this rank's buffers are for call `postedSeq`,
  // and how far it got. Addresses are in this rank's process; peers read them with
  // process_vm_readv and never dereference them.
  alignas(64) std::atomic<uint64_t> directPostedSeq{0};
  uint64_t directSendAddr = 0;
  uint64_t directRecvAddr = 0;
  alignas(64) std::atomic<uint64_t> directReducedSeq{0};  // its share of call s is final
  alignas(64) std::atomic<uint64_t> directDoneSeq{0};     // it finished reading peers' buffers
  alignas(64) std::atomic<uint32_t> failed{0};            // set when this rank's communicator failed
  char failReason[188];
  // Set when this rank destroyed its communicator normally: its process may then exit without
  // that being a failure, since it owes its peers nothing more.
  std::atomic<uint32_t> departed{0};
  alignas(64) uint64_t layoutSignature = 0;  // identical on every rank, or the layouts differ
  int32_t pid = 0;
};

struct alignas(64) ShmFifoHeader {
  std::atomic<uint64_t> head{0};  // slots posted by the sender
  char padHead[56];
  std::atomic<uint64_t> tail{0};  // slots released by the receiver
  char padTail[56];
};

class ShmDomain {
 public:
  // localRanks: the communicator ranks on this host, ascending; myRank is among them.
  ShmDomain(const ShmConfig& config, int myRank, std::vector<int> localRanks);
  ~ShmDomain();

  // Phase 1: the blob the bootstrap sends to the other local ranks (the segment's locator).
  std::string blob() const { return own_.locator(); }
  // Phase 2: maps every local rank's segment (blobs indexed like localRanks) and checks layouts.
  void attach(const std::vector<std::string>& blobs);
  // After every local rank attached: our segment needs no name or open descriptor any more.
  void releaseLocator() { own_.releaseLocator(); }

  int localCount() const { return static_cast<int>(localRanks_.size()); }
  int localIndexOf(int rank) const;  // -1 when rank is not on this host
  int myLocalIndex() const { return myLocal_; }
  const std::vector<int>& localRanks() const { return localRanks_; }
  const ShmConfig& config() const { return config_; }

  std::unique_ptr<SendConnection> connectSend(int peerRank);
  std::unique_ptr<RecvConnection> connectRecv(int peerRank);

  ShmRankHeader* header(int localIndex) const { return headers_[localIndex]; }
  ShmRankHeader* myHeader() const { return headers_[myLocal_]; }
  // One of the two one-shot buffers of a local rank.
  uint8_t* oneshotBuffer(int localIndex, int which) const;

  // Wakes every other local rank that sleeps; call after publishing what they wait for.
  void ringPeers() const;
  // Marks this rank failed and wakes every local rank so that they notice at once.
  void announceFailure(const std::string& reason);
  // Throws CollError(collRemoteError) naming a local peer that failed or whose process ended.
  void checkPeers() const;

 private:
  size_t fifoBytes() const;
  size_t segmentBytes() const;
  uint8_t* fifoBase(int receiverLocal, int senderLocal) const;

  ShmConfig config_;
  int myRank_;
  int myLocal_ = -1;
  std::vector<int> localRanks_;
  ShmSegment own_;
  std::vector<ShmSegment> peers_;  // indexed by local index; own slot empty
  std::vector<ShmRankHeader*> headers_;
  std::vector<int> pidfds_;  // per local index; -1 for self and same-process ranks
};

}  // namespace transport
}  // namespace coll
