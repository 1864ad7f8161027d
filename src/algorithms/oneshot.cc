#include "src/algorithms/oneshot.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "common/hash.h"
#include "kernels/cpu/reduce.h"
#include "src/algorithms/cost_model.h"
#include "src/call_tag.h"
#include "src/collective_table.h"
#include "src/exec/peer_calls.h"
#include "src/validate_counts.h"

namespace coll {

OneShot::OneShot(const NativeArgs& args)
    : memory_(*args.memory),
      peerCalls_(args.peerCalls),
      rank_(args.rank),
      nranks_(args.nranks),
      slotBytes_(args.oneshotBytes / kSlotsPerBuffer),
      seen_(static_cast<size_t>(args.nranks), 0) {
  for (int r = 0; r < nranks_; ++r) {
    areas_.push_back(memory_.area(r));
    for (int which = 0; which < 2; ++which) buffers_.push_back(memory_.oneshotBuffer(r, which));
  }
}

OneShot::Region OneShot::chooseRegion(size_t bytes, size_t trailerBytes, uint64_t seq) {
  Region region;
  int first, count;
  // Every published input is followed by its trailer (oneshot.h), in the region it takes.
  const size_t held = bytes + trailerBytes;
  const size_t packed = (held + kPackedAlignBytes - 1) / kPackedAlignBytes * kPackedAlignBytes;
  const bool packs = bytes <= kPackedMaxBytes && 2 * packed <= slotBytes_;
  if (packs && packedEnd_ > 0 && packedEnd_ + packed <= slotBytes_) {
    // The next lines of the slot the previous call opened: no earlier call of this round wrote
    // them, and the wait for the round's readers was made when the slot was opened.
    const int slot = (nextSlot_ + 2 * kSlotsPerBuffer - 1) % (2 * kSlotsPerBuffer);
    region.buffer = slot / kSlotsPerBuffer;
    region.offset = static_cast<size_t>(slot % kSlotsPerBuffer) * slotBytes_ + packedEnd_;
    packedEnd_ += packed;
    slotLastUse_[slot] = seq;
    return region;  // lastUse 0: nothing to wait for
  }
  packedEnd_ = packs ? packed : 0;
  if (held > slotBytes_) {
    region.buffer = 1 - previousBuffer_;
    first = region.buffer * kSlotsPerBuffer, count = kSlotsPerBuffer;
  } else {
    // The next slot; after a whole buffer, the first slot of the other one.
    int slot = nextSlot_;
    if (previousWhole_ && slot / kSlotsPerBuffer == previousBuffer_) slot = (1 - previousBuffer_) * kSlotsPerBuffer;
    nextSlot_ = (slot + 1) % (2 * kSlotsPerBuffer);
    region.buffer = slot / kSlotsPerBuffer;
    region.offset = static_cast<size_t>(slot % kSlotsPerBuffer) * slotBytes_;
    first = slot, count = 1;
  }
  for (int i = first; i < first + count; ++i) {
    region.lastUse = std::max(region.lastUse, slotLastUse_[i]);
    slotLastUse_[i] = seq;
  }
  previousBuffer_ = region.buffer;
  previousWhole_ = count > 1;
  return region;
}

void OneShot::waitForReaders(uint64_t lastUse, PeerWaiter& waiter) {
  if (lastUse == 0) return;  // never written
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_ || seen_[r] > lastUse) continue;  // this rank is past it: it runs call seq_
    while ((seen_[r] = progressOf(r, lastUse + 1)) <= lastUse) waiter.idle();
    waiter.progressed();
  }
}

void OneShot::waitForStampedReaders(uint64_t lastUse, PeerWaiter& waiter) {
  // Only a rank a whole ring of lines ahead waits here: a reduce's or gather's leaves, a
  // broadcast's root, whose readers lag. Were it to watch the line stamps, it would gain one call
  // per stamp and from then on run in step with the slower rank: a read of that rank's line on
  // every call, which the rank's next stamp on the line then has to take back (a 2-rank 8-byte
  // reduce's leaf waited on 31,000-33,000 of 40,000 calls). The flag moves every kProgressEvery
  // calls, so the rank ahead waits about once in that many (the same leaf: about 570 waits).
  // The flag's next multiple of kProgressEvery at or above lastUse + 1 is at most
  // lastUse + kProgressEvery < seq: a call every peer reaches without this rank's later calls.
  const uint64_t flagTarget = (lastUse + kProgressEvery) / kProgressEvery * kProgressEvery;
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_ || seen_[r] > lastUse) continue;
    while ((seen_[r] = areas_[r]->oneshotSeq.load(std::memory_order_acquire)) < flagTarget) waiter.idle();
    waiter.progressed();
  }
  slowestSeen_ = UINT64_MAX;
  for (int r = 0; r < nranks_; ++r)
    if (r != rank_) slowestSeen_ = std::min(slowestSeen_, seen_[r]);
}

uint64_t OneShot::progressOf(int rank, uint64_t target) const {
  // A rank that started call t raised its flag to t (a call in a region, and every
  // kProgressEvery-th inline or tiny call), and stamped its inline line or tiny entry for call t
  // with t (an inline or tiny call); each word only grows, and each is a lower bound of the call
  // the rank runs.
  transport::NativeArea* area = areas_[rank];
  const uint64_t flag = area->oneshotSeq.load(std::memory_order_acquire);
  if (flag >= target) return flag;
  const uint64_t stamp = callOfStamp(
      InlineRing::entry(area, static_cast<int>(target % InlineRing::kCalls)).stamp.load(std::memory_order_acquire));
  if (stamp >= target) return stamp;
  return std::max(std::max(flag, stamp),
                  callOfStamp(TinyRing::entry(area, static_cast<int>(target % TinyRing::kCalls))
                                  .stamp.load(std::memory_order_acquire)));
}

template <class Ring, bool kVariable>
int OneShot::publishStamped(const CollCall& call, size_t bytes, uint64_t seq, uint64_t stamp, uint64_t digest,
                            PeerWaiter& waiter) {
  constexpr uint64_t ringCalls = Ring::kCalls;
  const int index = static_cast<int>(seq % ringCalls);
  auto& entry = Ring::entry(areas_[rank_], index);
  // The entry's previous call was seq - ringCalls: every peer must have finished reading it.
  if (seq > ringCalls && slowestSeen_ <= seq - ringCalls) waitForStampedReaders(seq - ringCalls, waiter);
  if (publishes(call)) {
    const size_t published = kVariable ? publishedBytes(call, bytes) : bytes;
    if (published > 0) memcpy(entry.data, call.sendbuff, published);
    if (kVariable) memcpy(entry.data + bytes, &digest, sizeof(digest));
  }
  entry.stamp.store(stamp, std::memory_order_release);
  // And this rank's own entry of a call ahead, for writing: the readers took it last time.
  __builtin_prefetch(&Ring::entry(areas_[rank_], static_cast<int>((seq + kPrefetchCalls) % ringCalls)), 1, 3);
  // An entry's stamp tells a rank running ahead only that this rank reached that call, so it
  // would read one of this rank's lines on every call (a line between the cores each time, and
  // this rank's next stamp then takes it back). Every kProgressEvery calls the flag says how far
  // this rank is, and the rank ahead reads again only that many calls later.
  if (seq % kProgressEvery == 0) areas_[rank_]->oneshotSeq.store(seq, std::memory_order_release);
  return index;
}

void OneShot::run(const CollCall& call, PeerWaiter& waiter) {
  if (call.counts == nullptr) {
    runCall<false>(call, waiter);
  } else {
    runCall<true>(call, waiter);
  }
}

template <bool kVariable>
void OneShot::runCall(const CollCall& call, PeerWaiter& waiter) {
  const uint64_t seq = ++seq_;
  const size_t bytes = oneshotInputBytes(call, nranks_);
  Region region;
  // An inline or tiny call's stamp, made once: the entry gets it and the peers' must equal it.
  const uint64_t stamp = stampOf(seq, call);
  // A variable-count call carries a digest of the counts that a stamp's few bits could not, made
  // once: after its input on an inline line, after its trailer in a region, and compared with the
  // peers'; a tiny entry has no room for it.
  const uint64_t digest = kVariable ? countsDigestOf(call, nranks_) : 0;
  if (!kVariable && fitsOn<TinyRing>(bytes)) {
    // Four calls to a line: a rank behind reads that line once for four calls, and the rank ahead
    // takes it back once to write them. With a line per call, a 2-rank 8-byte gather slowed with
    // every slow cache-line hand-off between the cores; now it holds nearly the fast phase's time
    // in both (docs/performance.md, "Latency at 8 bytes").
    region.tinyEntry = publishStamped<TinyRing, kVariable>(call, bytes, seq, stamp, digest, waiter);
  } else if (fitsOn<InlineRing>(kVariable ? bytes + sizeof(digest) : bytes)) {
    region.inlineLine = publishStamped<InlineRing, kVariable>(call, bytes, seq, stamp, digest, waiter);
  } else {
    region = chooseRegion(bytes, trailerBytes<kVariable>(), seq);
    if (publishes(call)) {
      // Where a rank waits for its readers anyway (all-reduce, ...) the flags seen then already
      // say they are done with the region; where it does not (a broadcast's root), this wait does.
      waitForReaders(region.lastUse, waiter);
      uint8_t* input = inputOf(rank_, region);
      const size_t published = kVariable ? publishedBytes(call, bytes) : bytes;
      if (published > 0) memcpy(input, call.sendbuff, published);
      const Trailer trailer{seq, collectiveTagOf(call)};
      memcpy(input + bytes, &trailer, sizeof(trailer));
      if (kVariable) memcpy(input + bytes + sizeof(trailer), &digest, sizeof(digest));
    }
    areas_[rank_]->oneshotSeq.store(seq, std::memory_order_release);
  }
  memory_.ringPeers();
  // Then only the ranks whose input this rank reads: none where only the root has an output and
  // this is not the root, the root alone where only its input is read, every rank otherwise (the
  // collective's layout).
  const CollectiveRow& row = collectiveRow(call.type);
  const DataLayout& layout = row.layout;
  if (!layout.rootOutputOnly || rank_ == call.root) {
    if (layout.sources != Sources::kRoot) {
      waitForRanks<kVariable>(seq, stamp, digest, -1, region, call, bytes, waiter);
    } else if (rank_ != call.root) {
      waitForRanks<kVariable>(seq, stamp, digest, call.root, region, call, bytes, waiter);
    }
  }
  // Where the ranks meet (a barrier: no data), the calls since the last barrier are compared
  // (peer_calls.h).
  if (!row.hasData && peerCalls_ != nullptr) peerCalls_->checkSinceLastBarrier();
  computeOutput(call, row, region);
}

bool OneShot::publishes(const CollCall& call) const { return publishesOn(rank_, nranks_, call); }

bool OneShot::publishesOn(int rank, int nranks, const CollCall& call) {
  // A rank publishes what its send buffer holds: nothing off a broadcast's or a scatter's root,
  // nothing for a barrier (the collective's row).
  const CollectiveRow& row = collectiveRow(call.type);
  return row.hasData && (row.variableCounts || row.sendMultiple(rank, call.root, nranks) > 0);
}

uint64_t OneShot::countsDigestOf(const CollCall& call, int nranks) {
  if (call.counts == nullptr) return 0;
  // The receive counts, which every rank of an all-gather-v or a reduce-scatter-v passes alike:
  // ranks whose arrays differ but whose totals agree fill the same regions, and only this tells
  // their inputs apart. One host, one byte order: the array's bytes as they lie.
  return Fnv1a().add(call.counts->recvcounts, static_cast<size_t>(nranks) * sizeof(size_t)).value() | 1;
}

size_t OneShot::publishedBytes(const CollCall& call, size_t bytes) {
  if (call.type == CollType::kAllGatherV) return call.counts->sendcount * call.elemSize;
  return bytes;
}

template <class Ring>
void OneShot::waitForStamps(uint64_t seq, uint64_t mine, int first, int end, int index, const CollCall& call,
                            PeerWaiter& waiter) {
  // The entries of the calls ahead: a rank that lags reads entries written long before, and a
  // load of each only when its call comes would wait for it every time.
  const int ahead = (index + kPrefetchCalls) % Ring::kCalls;
  for (int r = first; r < end; ++r)
    if (r != rank_) __builtin_prefetch(&Ring::entry(areas_[r], ahead), 0, 3);
  int next = first;
  while (next < end) {
    const uint64_t stamp = Ring::entry(areas_[next], index).stamp.load(std::memory_order_acquire);
    if ((seen_[next] = callOfStamp(stamp)) < seq) {
      waiter.idle();
      continue;
    }
    // The check is the comparison the wait makes anyway, of the word it loaded: a peer cannot
    // stamp the entry for a later call before this rank is done with this one, so a stamp that
    // reached seq is this call's, and all of it, tag bits included, must be this rank's (its own
    // entry holds `mine`).
    if (stamp != mine) throwMismatch(next, callTagOfStamp(stamp), call);
    ++next;
    waiter.progressed();
  }
}

template <class WordOf>
void OneShot::waitForWords(uint64_t seq, int first, int end, WordOf wordOf, PeerWaiter& waiter) {
  int next = first;
  while (next < end) {
    if ((seen_[next] = wordOf(next).load(std::memory_order_acquire)) >= seq) {
      ++next;
      waiter.progressed();
    } else {
      waiter.idle();
    }
  }
}

template <bool kVariable>
void OneShot::waitForRanks(uint64_t seq, uint64_t stamp, uint64_t digest, int only, const Region& region,
                           const CollCall& call, size_t bytes, PeerWaiter& waiter) {
  const int first = only >= 0 ? only : 0;
  const int end = only >= 0 ? only + 1 : nranks_;
  if (region.tinyEntry >= 0) {
    waitForStamps<TinyRing>(seq, stamp, first, end, region.tinyEntry, call, waiter);
  } else if (region.inlineLine >= 0) {
    waitForStamps<InlineRing>(seq, stamp, first, end, region.inlineLine, call, waiter);
    if (kVariable) checkInlineDigests(digest, first, end, region.inlineLine, call, bytes);
  } else {
    waitForWords(
        seq, first, end, [this](int r) -> const std::atomic<uint64_t>& { return areas_[r]->oneshotSeq; }, waiter);
    checkTrailers<kVariable>(seq, digest, first, end, region, call, bytes);
  }
}

template <bool kVariable>
void OneShot::checkTrailers(uint64_t seq, uint64_t digest, int first, int end, const Region& region,
                            const CollCall& call, size_t bytes) const {
  const Trailer mine{seq, collectiveTagOf(call)};
  for (int r = first; r < end; ++r) {
    if (r == rank_ || !publishesOn(r, nranks_, call)) continue;
    // Where this rank's own count puts the peer's trailer: a peer that published by another count
    // left it elsewhere (what lies here is its data, or an older call's trailer, never this call's).
    const uint8_t* after = inputOf(r, region) + bytes;
    Trailer theirs;
    memcpy(&theirs, after, sizeof(theirs));
    if (theirs.seq != mine.seq || theirs.tag != mine.tag) throwMismatch(r, theirs.seq == seq ? theirs.tag : 0, call);
    if (kVariable) {
      uint64_t theirDigest;
      memcpy(&theirDigest, after + sizeof(theirs), sizeof(theirDigest));
      if (theirDigest != digest) throwCountsMismatch(r, call);
    }
  }
}

void OneShot::checkInlineDigests(uint64_t mine, int first, int end, int line, const CollCall& call,
                                 size_t bytes) const {
  for (int r = first; r < end; ++r) {
    if (r == rank_) continue;
    // The stamps matched: the line holds this call's input, the digest after it.
    uint64_t theirs;
    memcpy(&theirs, InlineRing::entry(areas_[r], line).data + bytes, sizeof(theirs));
    if (theirs != mine) throwCountsMismatch(r, call);
  }
}

void OneShot::throwCountsMismatch(int peer, const CollCall& call) const {
  throw CallMismatchError(
      collRemoteError,
      formatString("rank %d passed other recvcounts than this rank (%d) for this %s of %zu elements in all: every "
                   "rank must pass the same recvcounts",
                   peer, rank_, collTypeName(call.type), call.count));
}

void OneShot::throwMismatch(int peer, uint64_t tagInItsBytes, const CollCall& call) const {
  // The call the peer recorded names what the user asked of it, which its bytes may not (the
  // plan choice rank 0 broadcasts, or an input left where this rank's count does not look).
  const uint64_t mine = collectiveTagOf(call);
  // A call further back that differs is where the ranks parted: named first.
  if (peerCalls_ != nullptr) peerCalls_->check();
  uint64_t theirs = peerCalls_ != nullptr ? peerCalls_->peerTag(peer) : 0;
  if (theirs == 0 || theirs == mine) theirs = tagInItsBytes;
  if (theirs == 0 || theirs == mine)
    throw CallMismatchError(
        collRemoteError,
        formatString("rank %d published its input for this one-shot call where this rank (%d), running %s, did not "
                     "find it: every rank must pass the same count and datatype (COLL_CHECK=1 names the first rank "
                     "that differs)",
                     peer, rank_, describeCallTag(mine).c_str()));
  throwTagMismatch(peer, theirs, rank_, mine);
}

void OneShot::reduceAll(const CollCall& call, const Region& region, size_t offset, size_t count, void* dst) {
  // The kernel takes a bounded number of sources per pass; wider jobs fold into dst.
  const void* srcs[kernels::kMaxReduceSources];
  void* dsts[1] = {dst};
  int first = 0;
  bool folded = false;
  while (first < nranks_) {
    int nsrcs = 0;
    if (folded) srcs[nsrcs++] = dst;
    while (first < nranks_ && nsrcs < kernels::kMaxReduceSources)
      srcs[nsrcs++] = sourceOf(first++, call, region) + offset * call.elemSize;
    int avgDivisor = (call.op == collAvg && first == nranks_ && nranks_ > 1) ? nranks_ : 0;
    kernels::reduceCopy(call.datatype, call.op, srcs, nsrcs, dsts, 1, count, avgDivisor);
    folded = true;
  }
}

const uint8_t* OneShot::sourceOf(int rank, const CollCall& call, const Region& region) const {
  const bool folds = nranks_ > kernels::kMaxReduceSources;
  if (rank == rank_ && publishes(call) && !folds) return static_cast<const uint8_t*>(call.sendbuff);
  return inputOf(rank, region);
}

void OneShot::computeVariableOutput(const CollCall& call, const CollectiveRow& row, const Region& region) {
  const VariableCounts& v = *call.counts;
  uint8_t* out = static_cast<uint8_t*>(call.recvbuff);
  if (row.reducing) {
    // This rank's block of every rank's input.
    if (v.recvcounts[rank_] > 0)
      reduceAll(call, region, blockOffsetOf(v.recvcounts, rank_), v.recvcounts[rank_], out);
    return;
  }
  for (int r = 0; r < nranks_; ++r) {
    const size_t bytes = v.recvcounts[r] * call.elemSize;
    if (bytes == 0) continue;
    const uint8_t* input = r == rank_ ? static_cast<const uint8_t*>(call.sendbuff) : inputOf(r, region);
    kernels::copyBytesUnlessSame(out + v.rdispls[r] * call.elemSize, input, bytes);
  }
}

void OneShot::computeOutput(const CollCall& call, const CollectiveRow& row, const Region& region) {
  if (!hasOutput(row, rank_, call.root)) return;
  if (call.counts != nullptr) {
    computeVariableOutput(call, row, region);
    return;
  }
  const DataLayout& layout = row.layout;
  uint8_t* out = static_cast<uint8_t*>(call.recvbuff);
  if (row.reducing) {
    // Every rank's input, at this rank's block where it takes one (reduce-scatter).
    reduceAll(call, region, layout.readsOwnBlock ? static_cast<size_t>(rank_) * call.count : 0, call.count, out);
    return;
  }
  // A copy from each source: its whole input or this rank's block of it, to the start of the
  // output or the source's block of it. This rank's own part comes from its send buffer, which
  // needs no copy where the call is in place.
  const size_t bytes = call.count * call.elemSize;
  const size_t inputOffset = layout.readsOwnBlock ? static_cast<size_t>(rank_) * bytes : 0;
  const size_t outputStride = layout.outputBlockPerSource ? bytes : 0;
  const bool rootOnly = layout.sources == Sources::kRoot;
  const int first = rootOnly ? call.root : 0;
  const int end = rootOnly ? call.root + 1 : nranks_;
  for (int r = first; r < end; ++r) {
    const uint8_t* input = r == rank_ ? static_cast<const uint8_t*>(call.sendbuff) : inputOf(r, region);
    kernels::copyBytesUnlessSame(out + r * outputStride, input + inputOffset, bytes);
  }
}

namespace {

// Bytes a rank moves through memory per byte of its input: it publishes it (read+write), then
// reads every rank's whole copy where its output is made of them all, or one input's worth.
double oneshotTraffic(const CollectiveRow& row, int n) {
  const bool readsEveryWholeInput = row.layout.sources == Sources::kEveryRank && !row.layout.readsOwnBlock;
  return readsEveryWholeInput ? 2.0 + n : 3.0;
}

}  // namespace

bool oneshotCanRun(const CollCall& call, const PlanContext& ctx, std::string* why) {
  size_t input = oneshotInputBytes(call, ctx.nranks);
  if (ctx.oneshotAvailable && input <= ctx.oneshotBytes) return true;
  if (why != nullptr)
    *why = formatString(
        "oneshot cannot run this %s: it needs every rank on one host with shared memory and at most %zu input "
        "bytes per rank (COLL_ONESHOT_BYTES), got %zu",
        collTypeName(call.type), ctx.oneshotBytes, input);
  return false;
}

bool oneshotEligible(const CollCall& call, const PlanContext& ctx) {
  const CollectiveRow& row = collectiveRow(call.type);
  // A barrier (no data) has nothing for the pipelines to win on.
  if (!row.hasData) return true;
  // Where ranks outnumber cores, everyone waiting for everyone costs each rank its turn on a core.
  // A ring whose blocks are mostly empty skips their steps and waits for few; one whose blocks
  // are mostly filled waits at every step (docs/performance.md, "Choices").
  if (row.variableCounts && ctx.ranksOutnumberCores && 2 * call.counts->filledBlocks <= static_cast<size_t>(ctx.nranks))
    return false;
  return modelOneShot(call, ctx) <= pipelineUs(call, ctx.nranks);
}

double modelOneShot(const CollCall& call, const PlanContext& ctx) {
  return kOneshotLatencyUs +
         oneshotInputBytes(call, ctx.nranks) * oneshotTraffic(collectiveRow(call.type), ctx.nranks) / kCopyBytesPerUs;
}

std::unique_ptr<NativeRunner> makeOneShot(const NativeArgs& args) { return std::make_unique<OneShot>(args); }

}  // namespace coll
