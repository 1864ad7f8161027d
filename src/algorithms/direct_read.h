// The direct-read path for large messages on one host: no staging through shared-memory FIFOs.
// Each rank publishes the addresses of its buffers; peers copy straight out of them with
// cross-memory attach, which the transport that maps the host's memory offers (LocalMemory).
//
// All-reduce (and reduce-scatter) on rank r: read block r of every peer's send buffer, a chunk at
// a time into cache-sized scratch, and reduce it with our own block into our receive buffer
// (streaming stores past the caches for large buffers); announce the block final; then (all-
// reduce) read every peer's final block straight into our receive buffer. All-gather and
// broadcast are the second half alone; all-to-all and scatter read each block once from the rank
// that holds it into the rank that needs it, and a gather's ranks write theirs into the root's.
// A broadcast's or scatter's root in place writes a share of the others' outputs meanwhile. A
// last handshake keeps every rank in the call until no peer still reads or writes its buffers.
//
// Each rank's offer carries its call's tag (src/call_tag.h). No rank reads or writes a peer's
// buffer before it has checked every peer's tag against its own: ranks whose counts or datatypes
// differ all fail at that point, naming both, and nothing is copied (a gather's rank that wrote
// its block by its own count, or a broadcast's root that wrote by its own, would write past a
// smaller buffer).
//
// Compared with the FIFO ring, nothing crosses between cores as freshly written cache lines:
// every byte read from a peer is its user buffer, read once. That matters most when the two
// cores do not share a cache (and it is what Open MPI's CMA single-copy path does, too).
#pragma once

#include <cstdint>
#include <vector>

#include <string>

#include "src/algorithms/native.h"
#include "src/algorithms/plan_context.h"

namespace coll {

struct CollectiveRow;

class DirectRead : public NativeRunner {
 public:
  explicit DirectRead(const NativeArgs& args);
  // AllReduce, ReduceScatter, AllGather, Broadcast, AllToAll, Gather and Scatter.
  void run(const CollCall& call, PeerWaiter& waiter) override;

 private:
  enum class Stage { kPosted, kReduced, kDone };
  void publish(uint64_t seq, const CollCall& call);
  // Throws when a peer's offer is for another call than this rank's (a count or datatype that
  // differs): after every offer is posted, before anything is copied.
  void checkOffers(const CollCall& call) const;
  void announce(Stage stage, uint64_t seq);
  void waitFor(int peer, Stage stage, uint64_t seq, PeerWaiter& waiter);
  // ThreadSanitizer builds only (common/sanitizer_sync.h): the flag hand-offs, named on the
  // buffers' addresses, which ranks that are threads of one process share.
  void nameHandOffToSanitizer(bool release);
  // Reduces element range [first, first+count) of every rank's send buffer (at sendOffset) into
  // dst, reading peers chunk by chunk.
  void reduceRange(const CollCall& call, size_t sendOffset, size_t count, void* dst);
  // The part of this rank's output that comes from its own input (all-gather, all-to-all, a
  // root's gather, scatter or broadcast), unless in place: it needs no peer, so it is copied
  // before waiting for them.
  void copyOwnShare(const CollCall& call, const CollectiveRow& row, size_t bytes);
  // Block p of the receive buffer from the `bytes` at blockOffset of rank p's send buffer, for
  // every other rank p (all-gather, all-to-all).
  void collectPeerBlocks(const CollCall& call, size_t blockOffset, size_t bytes);
  // Copies `bytes` at `remoteOffset` of peer's receive (or send) buffer into local memory.
  void readFrom(int peer, bool peerRecvBuffer, size_t remoteOffset, void* local, size_t bytes);
  // Copies `bytes` of local memory to `remoteOffset` of peer's receive buffer.
  void writeTo(int peer, size_t remoteOffset, const void* local, size_t bytes);
  // A broadcast (blockStride 0) or a scatter (blockStride = bytes): rank p's `bytes` of output
  // are the root's input at p * blockStride.
  void spreadFromRoot(const CollCall& call, size_t bytes, size_t blockStride);
  // Of those, the bytes the root writes into each other rank's output, at its end. A root in place
  // has no copy of its own to make while the others read their whole output from it, so it takes
  // 1/n of each (page-aligned) off their reads; a root out of place copies its own output
  // meanwhile, and writes nothing.
  size_t rootWrittenBytes(const CollCall& call, size_t bytes, size_t blockStride) const;

  transport::LocalMemory& memory_;
  std::vector<transport::NativeArea*> areas_;  // every rank's, looked up once
  int rank_;
  int nranks_;
  size_t streamingBytes_;
  uint64_t seq_ = 0;
  std::vector<unsigned char> scratch_;  // one chunk per peer
};

// The table's entry (algorithm_table.cc).
bool directReadCanRun(const CollCall& call, const PlanContext& ctx, std::string* why);
// Offered to the tuner from COLL_DIRECT_READ_BYTES of input on, on up to 16 ranks. Below it, where
// the collective's row says so (CollectiveRow::cmaBelowThreshold, kCmaTwoRankModel): a 2-rank
// all-gather from kDirectReadTwoRankBytes on: there the ring measured faster than direct reads
// while the two cores shared a cache and much slower while they did not, and the tuner follows.
// (kCmaCrowded) An all-to-all among more ranks than the host has cores, from kDirectReadCrowdedAllToAllBytes on:
// there direct reads measured faster than the pairwise exchange while the cores shared no cache
// (docs/performance.md, "Choices in the code, and the measurement behind each").
bool directReadEligible(const CollCall& call, const PlanContext& ctx);
constexpr size_t kDirectReadCrowdedAllToAllBytes = 128 * 1024;
// (kCmaTwoRankWindow) A broadcast, an all-to-all, a scatter or a gather between two ranks from kDirectReadTwoRankBytes
// up to COLL_DIRECT_READ_BYTES takes direct reads outright, before the one-shot shortcut and
// without the tuner: each block crosses once, straight from one rank's buffer into the other's,
// which costs the same whether or not the two cores share a cache, where the chain's, the FIFOs'
// and the one-shot path's two copies hand every line across and ran several times slower when
// they do not, and were not faster by much when they do (docs/algorithms.md). (A gather joined
// once its ranks wrote their blocks instead of the root reading them: then the writes held steady
// where the FIFO swung with the cores' phase; docs/performance.md, "Choices in the code, and the
// measurement behind each".) Below the window the one-shot path's single synchronisation wins; on 4
// ranks sharing 2 cores the binomial tree and the pairwise exchange measured faster than direct
// reads at 64 KiB while the cores shared a cache, so more ranks keep the usual plan.
constexpr size_t kDirectReadTwoRankBytes = 32 * 1024;
bool directReadPreferred(const CollCall& call, const PlanContext& ctx);
double modelDirectRead(const CollCall& call, const PlanContext& ctx);
std::unique_ptr<NativeRunner> makeDirectRead(const NativeArgs& args);

}  // namespace coll
