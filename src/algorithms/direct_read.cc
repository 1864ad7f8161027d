#include "src/algorithms/direct_read.h"

#include <algorithm>

#include "common/error.h"
#include "common/sanitizer_sync.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/streaming.h"
#include "src/algorithms/cost_model.h"
#include "src/call_tag.h"
#include "src/collective_table.h"

namespace coll {
namespace {

// Per peer, one chunk of scratch: large enough that a read's system call is small beside its
// copy, small enough that every peer's chunk and the result stay in L2 while they are reduced.
constexpr size_t kChunkBytes = 256 << 10;
constexpr size_t kScratchBytes = 1 << 20;
// A broadcast's split between the root's writes and the other ranks' reads falls on page bounds:
// neither copy then pins a page the other also pins.
constexpr size_t kSplitAlignBytes = 4096;

// How this path moves a collective's data, from the collective's row (its layout, whether it
// reduces): what run() and the model follow instead of switching on the collective.
enum class Move {
  kReduceThenShare,  // each rank reduces its slice of every input, then reads the others' (all-reduce)
  kReduceOwnBlock,   // each rank reduces its block of every input (reduce-scatter)
  kReadPeers,        // each rank reads every peer's input, or its block of it (all-gather, all-to-all)
  kWriteToRoot,      // each rank writes its input into the root's output (gather)
  kSpreadFromRoot,   // each rank reads its output, or its block of it, from the root (broadcast, scatter)
  kNone,             // not served: a reduce, a barrier, point to point, variable counts
};

Move moveOf(const CollectiveRow& row) {
  const DataLayout& layout = row.layout;
  if (layout.sources == Sources::kNone || row.variableCounts) return Move::kNone;
  if (row.reducing) {
    if (layout.rootOutputOnly) return Move::kNone;
    return layout.readsOwnBlock ? Move::kReduceOwnBlock : Move::kReduceThenShare;
  }
  if (layout.sources == Sources::kRoot) return Move::kSpreadFromRoot;
  return layout.rootOutputOnly ? Move::kWriteToRoot : Move::kReadPeers;
}

std::atomic<uint64_t>& stageWord(transport::NativeArea* h, int stage) {
  return stage == 0 ? h->directPostedSeq : stage == 1 ? h->directReducedSeq : h->directDoneSeq;
}

}  // namespace

DirectRead::DirectRead(const NativeArgs& args)
    : memory_(*args.memory), rank_(args.rank), nranks_(args.nranks), streamingBytes_(args.streamingBytes) {
  for (int r = 0; r < nranks_; ++r) areas_.push_back(memory_.area(r));
}

void DirectRead::publish(uint64_t seq, const CollCall& call) {
  transport::NativeArea* me = areas_[rank_];
  me->directSendAddr = reinterpret_cast<uint64_t>(call.sendbuff);
  me->directRecvAddr = reinterpret_cast<uint64_t>(call.recvbuff);
  me->directTag = collectiveTagOf(call);
  announce(Stage::kPosted, seq);
}

void DirectRead::checkOffers(const CollCall& call) const {
  // Every rank has seen every offer before any rank reads or writes: all of them find the
  // mismatch, and none has touched a peer's buffer.
  const uint64_t mine = collectiveTagOf(call);
  for (int p = 0; p < nranks_; ++p)
    if (p != rank_ && areas_[p]->directTag != mine) throwTagMismatch(p, areas_[p]->directTag, rank_, mine);
}

void DirectRead::announce(Stage stage, uint64_t seq) {
  nameHandOffToSanitizer(/*release=*/true);
  stageWord(areas_[rank_], static_cast<int>(stage)).store(seq, std::memory_order_release);
  memory_.ringPeers();
}

void DirectRead::waitFor(int peer, Stage stage, uint64_t seq, PeerWaiter& waiter) {
  std::atomic<uint64_t>& word = stageWord(areas_[peer], static_cast<int>(stage));
  while (word.load(std::memory_order_acquire) < seq) waiter.idle();
  nameHandOffToSanitizer(/*release=*/false);
  waiter.progressed();
}

void DirectRead::nameHandOffToSanitizer(bool release) {
  if (!kSanitizerSync) return;
  // Every buffer any rank published: a peer's may still hold last call's address before it posts,
  // which only adds a harmless release.
  for (transport::NativeArea* area : areas_)
    for (uint64_t address : {area->directSendAddr, area->directRecvAddr}) {
      if (address == 0) continue;
      if (release) {
        sanitizerRelease(address);
      } else {
        sanitizerAcquire(address);
      }
    }
}

void DirectRead::readFrom(int peer, bool peerRecvBuffer, size_t remoteOffset, void* local, size_t bytes) {
  transport::NativeArea* h = areas_[peer];
  uint64_t base = peerRecvBuffer ? h->directRecvAddr : h->directSendAddr;
  memory_.readMemory(peer, base + remoteOffset, local, bytes);
}

void DirectRead::writeTo(int peer, size_t remoteOffset, const void* local, size_t bytes) {
  memory_.writeMemory(peer, areas_[peer]->directRecvAddr + remoteOffset, local, bytes);
}

size_t DirectRead::rootWrittenBytes(const CollCall& call, size_t bytes, size_t blockStride) const {
  // Every rank decides from the root's published addresses, so both ends agree on the split.
  const transport::NativeArea* root = areas_[call.root];
  const uint64_t ownBlock = static_cast<uint64_t>(call.root) * blockStride;
  if (root->directSendAddr + ownBlock != root->directRecvAddr) return 0;  // the root copies its own output
  return bytes / static_cast<size_t>(nranks_) / kSplitAlignBytes * kSplitAlignBytes;
}

void DirectRead::spreadFromRoot(const CollCall& call, size_t bytes, size_t blockStride) {
  // The back share of every other rank's output comes from the root's writes, the rest from that
  // rank's own read: the copies run side by side.
  const size_t written = rootWrittenBytes(call, bytes, blockStride);
  const size_t read = bytes - written;
  const auto* input = static_cast<const unsigned char*>(call.sendbuff);
  if (rank_ != call.root) {
    readFrom(call.root, /*peerRecvBuffer=*/false, static_cast<size_t>(rank_) * blockStride, call.recvbuff, read);
    return;
  }
  for (int k = 1; k < nranks_ && written > 0; ++k) {
    int p = (rank_ + k) % nranks_;
    writeTo(p, read, input + static_cast<size_t>(p) * blockStride + read, written);
  }
}

void DirectRead::reduceRange(const CollCall& call, size_t sendOffset, size_t count, void* dst) {
  size_t es = call.elemSize;
  int peers = nranks_ - 1;
  size_t chunkElems = std::max<size_t>(1, std::min(kChunkBytes, kScratchBytes / std::max(1, peers)) / es);
  if (scratch_.size() < chunkElems * es * peers) scratch_.resize(chunkElems * es * peers);
  bool stream = streamingBytes_ > 0 && count * es >= streamingBytes_;
  int avgDivisor = call.op == collAvg ? nranks_ : 0;
  const void* srcs[kernels::kMaxReduceSources];
  for (size_t done = 0; done < count; done += chunkElems) {
    size_t n = std::min(chunkElems, count - done);
    size_t byteOffset = (sendOffset + done) * es;
    // Sources in rank order: the same order on every rank, though each block is reduced once.
    int slot = 0;
    for (int p = 0; p < nranks_; ++p) {
      if (p == rank_) {
        srcs[p] = static_cast<const unsigned char*>(call.sendbuff) + byteOffset;
        continue;
      }
      unsigned char* local = scratch_.data() + static_cast<size_t>(slot++) * chunkElems * es;
      readFrom(p, /*peerRecvBuffer=*/false, byteOffset, local, n * es);
      srcs[p] = local;
    }
    void* out = static_cast<unsigned char*>(dst) + done * es;
    void* dsts[1] = {out};
    if (stream) {
      kernels::reduceCopyStreamingLast(call.datatype, call.op, srcs, nranks_, dsts, 1, n, avgDivisor);
    } else {
      kernels::reduceCopy(call.datatype, call.op, srcs, nranks_, dsts, 1, n, avgDivisor);
    }
  }
}

void DirectRead::copyOwnShare(const CollCall& call, const CollectiveRow& row, size_t bytes) {
  // A copy collective's part that this rank both sources and receives: its input, or its block
  // of it, to the start of its output or its block there.
  const DataLayout& layout = row.layout;
  if (row.reducing || !hasOutput(row, rank_, call.root)) return;
  if (layout.sources == Sources::kRoot && rank_ != call.root) return;
  const size_t mine = static_cast<size_t>(rank_) * bytes;
  const auto* send = static_cast<const unsigned char*>(call.sendbuff) + (layout.readsOwnBlock ? mine : 0);
  auto* recv = static_cast<unsigned char*>(call.recvbuff) + (layout.outputBlockPerSource ? mine : 0);
  kernels::copyBytesUnlessSame(recv, send, bytes);
}

void DirectRead::collectPeerBlocks(const CollCall& call, size_t blockOffset, size_t bytes) {
  for (int k = 1; k < nranks_; ++k) {
    int p = (rank_ + k) % nranks_;  // start with different peers on different ranks
    readFrom(p, /*peerRecvBuffer=*/false, blockOffset,
             static_cast<unsigned char*>(call.recvbuff) + static_cast<size_t>(p) * bytes, bytes);
  }
}

void DirectRead::run(const CollCall& call, PeerWaiter& waiter) {
  if (nranks_ > kernels::kMaxReduceSources)
    throwError(collInternalError, "direct read supports at most %d ranks", kernels::kMaxReduceSources);
  uint64_t seq = ++seq_;
  size_t es = call.elemSize;
  size_t bytes = call.count * es;
  const CollectiveRow& row = collectiveRow(call.type);
  const Move move = moveOf(row);
  const size_t mine = static_cast<size_t>(rank_) * bytes;
  publish(seq, call);
  if (move != Move::kNone) copyOwnShare(call, row, bytes);
  for (int p = 0; p < nranks_; ++p)
    if (p != rank_) waitFor(p, Stage::kPosted, seq, waiter);
  checkOffers(call);

  switch (move) {
    case Move::kReduceThenShare: {
      // Rank r owns elements [r*per, ...): the same split every rank computes.
      size_t per = (call.count + nranks_ - 1) / nranks_;
      auto blockBegin = [&](int b) { return std::min(call.count, per * static_cast<size_t>(b)); };
      size_t first = blockBegin(rank_), firstEnd = blockBegin(rank_ + 1);
      reduceRange(call, first, firstEnd - first, static_cast<unsigned char*>(call.recvbuff) + first * es);
      announce(Stage::kReduced, seq);
      for (int k = 1; k < nranks_; ++k) {
        int p = (rank_ + k) % nranks_;  // start with different peers on different ranks
        waitFor(p, Stage::kReduced, seq, waiter);
        size_t begin = blockBegin(p), end = blockBegin(p + 1);
        readFrom(p, /*peerRecvBuffer=*/true, begin * es, static_cast<unsigned char*>(call.recvbuff) + begin * es,
                 (end - begin) * es);
      }
      break;
    }
    case Move::kReduceOwnBlock:
      reduceRange(call, static_cast<size_t>(rank_) * call.count, call.count, call.recvbuff);
      break;
    case Move::kReadPeers:
      // Where a rank takes its block of every peer's input (all-to-all), each peer's blocks are
      // read by their owners alone, so the ranks' reads run side by side.
      collectPeerBlocks(call, row.layout.readsOwnBlock ? mine : 0, bytes);
      break;
    case Move::kWriteToRoot:
      // Every other rank writes its block into the root's output, all at once: the root reading
      // them one after another was slower than the FIFO.
      if (rank_ != call.root) writeTo(call.root, mine, call.sendbuff, bytes);
      break;
    case Move::kSpreadFromRoot:
      // Every rank reads its output from the root (its own block of the root's input, for a
      // scatter): n-1 copies at once instead of the root's one after another.
      spreadFromRoot(call, bytes, /*blockStride=*/row.layout.readsOwnBlock ? bytes : 0);
      break;
    case Move::kNone:
      throwError(collInternalError, "direct read cannot run %s", collTypeName(call.type));
  }
  // Stay until every peer has finished reading our buffers: the caller may reuse them at once.
  announce(Stage::kDone, seq);
  for (int p = 0; p < nranks_; ++p)
    if (p != rank_) waitFor(p, Stage::kDone, seq, waiter);
}

bool directReadCanRun(const CollCall&, const PlanContext& ctx, std::string* why) {
  if (ctx.directReadAvailable) return true;
  if (why != nullptr && ctx.deviceMemory) {
    // The device path takes cma before planning where it can (src/plan/device_program.cc).
    *why =
        "cma on device memory runs an all-reduce of ranks on one GPU whose kernels run together (threads of "
        "one process, or processes under MPS outside a CUDA graph capture, since their buffers are mapped call by "
        "call), at most 8 ranks (the direct kernel, docs/cuda.md)";
    return false;
  }
  if (why != nullptr)
    *why =
        "cma cannot run: it needs every rank on one host and permission to read the other ranks' memory "
        "(process_vm_readv; see /proc/sys/kernel/yama/ptrace_scope)";
  return false;
}

bool directReadEligible(const CollCall& call, const PlanContext& ctx) {
  // run() reduces every rank's block in one pass of the kernel, which takes this many sources.
  const size_t bytes = oneshotInputBytes(call, ctx.nranks);
  const uint8_t below = collectiveRow(call.type).cmaBelowThreshold;
  const bool twoRankModel = (below & kCmaTwoRankModel) && ctx.nranks == 2 && bytes >= kDirectReadTwoRankBytes;
  const bool crowded = (below & kCmaCrowded) && ctx.nranks > 2 && ctx.ranksOutnumberCores &&
                       bytes >= kDirectReadCrowdedAllToAllBytes;
  return ctx.directReadBytes > 0 && (bytes >= ctx.directReadBytes || twoRankModel || crowded) &&
         ctx.nranks <= kernels::kMaxReduceSources;
}

bool directReadPreferred(const CollCall& call, const PlanContext& ctx) {
  const size_t bytes = oneshotInputBytes(call, ctx.nranks);
  const bool oneCopyWins = (collectiveRow(call.type).cmaBelowThreshold & kCmaTwoRankWindow) != 0;
  return oneCopyWins && ctx.directReadAvailable && !ctx.deviceMemory && ctx.directReadBytes > 0 &&
         bytes >= kDirectReadTwoRankBytes && bytes < ctx.directReadBytes && ctx.nranks == 2;
}

double modelDirectRead(const CollCall& call, const PlanContext& ctx) {
  // Every byte a rank needs from a peer is read once, straight from the peer's buffer; a few
  // flag round trips between the stages.
  const int n = ctx.nranks;
  const double bytes = static_cast<double>(oneshotInputBytes(call, n));
  // As fractions of one rank's input: all-reduce reads n-1 of n blocks twice, a gather's root
  // every other rank's whole input, and the others n-1 of n blocks (or, scatter, one).
  double reads = static_cast<double>(n - 1) / n;
  const Move move = moveOf(collectiveRow(call.type));
  if (move == Move::kReduceThenShare) reads *= 2;
  if (move == Move::kWriteToRoot) reads = n - 1;
  return 3 * kOneshotLatencyUs + reads * bytes / kCopyBytesPerUs;
}

std::unique_ptr<NativeRunner> makeDirectRead(const NativeArgs& args) { return std::make_unique<DirectRead>(args); }

}  // namespace coll
