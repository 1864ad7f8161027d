// The one-shot path for small messages on one host: every rank copies its whole input into its own
// shared-memory buffer and raises a sequence flag; once every rank's flag shows the call, each rank
// computes its own output straight from the others' buffers, in rank order (so an all-reduce gives
// bitwise-identical results everywhere). One synchronisation per call, which is what makes 8-byte
// latency a fraction of a microsecond.
//
// A rank raises its flag to s once it has published call s's input and finished every read of call
// s-1. It then waits only for the ranks whose input it reads: everyone for the all-to-all kinds and
// a barrier, the root for a broadcast or scatter, nobody for a reduce's or gather's non-roots (and
// nobody for a broadcast's root), so a rooted call does not hold every rank in step (with 4 ranks
// on 2 cores, an 8-byte broadcast that waited for everyone took as long as an all-reduce).
//
// Inputs of 9 to 56 bytes go on the line of the rank's area for call s (s modulo 512), with the
// call's number as the line's stamp in place of the flag: a reader polls that one line and finds
// the input there (transport::InlineInput), one cache-line transfer where the flag and a slot take
// two (measured faster; docs/performance.md, "Choices in the code, and the measurement behind
// each"). Inputs of at most 8 bytes go four calls to a line instead (transport::TinyInputs: a stamp
// and 8 bytes each, call s on entry s modulo 2048), so that a rank behind reads one line per four
// calls. A rank stamps its line or entry for every inline call, reading or not, so the stamps are
// flags too; before it reuses a line or an entry, every peer has started a later call than its last
// one.
//
// Where a larger call's input goes: a whole buffer for inputs above an eighth of one, alternating
// between the two; smaller inputs take the next of 16 slots (each an eighth of a buffer) in turn,
// so a rank that waits for nobody (a broadcast's root) may run up to 15 calls ahead of its readers:
// when ranks outnumber cores, a rank then does many calls in one turn on a core instead of one.
// Tiny inputs (at most kPackedMaxBytes) are packed: consecutive ones share a slot, each in its own
// whole cache lines, so a root runs up to 15 slots' worth of them ahead (hundreds of calls) and a
// reader's turn on a shared core drains that many. Only the call that opens a slot waits for its
// readers; the calls packed after it write bytes no earlier call of this round used. A region is
// never the one the previous call used; before a rank overwrites it, every peer's flag has passed
// the last call that used it (a flag above t means that peer finished reading call t). Since that
// call is at most s-2, the wait is for flags at most s-1, which every rank raises before it waits
// for anyone: no cycle. Every rank makes the same choices, for its own buffers and for those it
// reads, from the call sizes alone.
//
// Each input says which call it belongs to (src/call_tag.h), where its reader looks anyway: a
// stamp holds the call's number and, in its low kStampTagBits, the call's collective, datatype and
// count (an input that fits an entry has a count below 64); an input in a region is followed by a
// trailer with the call's number and tag. A reader checks the stamps or trailers of the ranks it
// waits for before it reads their inputs, and fails naming both calls where they differ (a rank
// whose count differs chooses another entry or region, so that its trailer is not where the
// reader looks: what lies there is never a trailer of this call). Inputs are copied only within
// their own entry or region, and outputs written by the rank's own count, so a peer's count never
// makes anyone write past a buffer; the check makes the mismatch an error instead of wrong data.
// A rank that reads nobody (a broadcast's root) returns without knowing, and fails at its next
// call that meets the readers' failure.
#pragma once

#include <cstdint>

#include <string>
#include <vector>

#include "src/algorithms/native.h"
#include "src/algorithms/plan_context.h"

namespace coll {

struct CollectiveRow;

class OneShot : public NativeRunner {
 public:
  explicit OneShot(const NativeArgs& args);
  void run(const CollCall& call, PeerWaiter& waiter) override;

 private:
  // run, instantiated for fixed counts and for variable counts (call.counts): the usual fixed-count
  // call compiles without the digest of the counts and its branches.
  template <bool kVariable>
  void runCall(const CollCall& call, PeerWaiter& waiter);
  // Whether this rank's (rank `rank`'s) input goes into its buffer for this call.
  bool publishes(const CollCall& call) const;
  static bool publishesOn(int rank, int nranks, const CollCall& call);
  // What follows an input in its region: the call's number and tag, and after them, for a
  // variable-count call, a digest of the counts every rank must pass alike (countsDigestOf).
  struct Trailer {
    uint64_t seq;
    uint64_t tag;
  };
  template <bool kVariable>
  static constexpr size_t trailerBytes() {
    return sizeof(Trailer) + (kVariable ? sizeof(uint64_t) : 0);
  }
  static uint64_t countsDigestOf(const CollCall& call, int nranks);
  // Bytes this rank copies into its region or line: its whole input, or an all-gather-v's own block
  // (`bytes`, the region's size, is the total every rank agrees on).
  static size_t publishedBytes(const CollCall& call, size_t bytes);
  // A stamp: the call's number, and in its low bits the call's collective, datatype and count.
  static constexpr int kStampTagBits = 14;
  static uint64_t stampOf(uint64_t seq, const CollCall& call) {
    return seq << kStampTagBits | uint64_t{static_cast<uint8_t>(call.type)} << 10 |
           (uint64_t{static_cast<uint32_t>(call.datatype)} & 0xf) << 6 | (call.count & 63);
  }
  static uint64_t callOfStamp(uint64_t stamp) { return stamp >> kStampTagBits; }
  // The call tag (src/call_tag.h) a stamp's low bits stand for.
  static uint64_t callTagOfStamp(uint64_t stamp) {
    return (((stamp >> 10) & 0xf) + 1) << 60 | ((stamp >> 6) & 0xf) << 56 | (stamp & 63);
  }
  // Where call `seq`'s input (`bytes` per rank) lies in every rank's buffers (offset from buffer
  // 0's start, as a buffer index and offset within it), and the last call that used any part of it.
  struct Region {
    int buffer = 0;
    size_t offset = 0;
    uint64_t lastUse = 0;
    int inlineLine = -1;  // an inline call's line in every rank's area (then the rest is unused)
    int tinyEntry = -1;   // a tiny call's entry in every rank's tiny inputs (likewise)
  };
  // `trailerBytes`: what follows the input (trailerBytes<kVariable>()).
  Region chooseRegion(size_t bytes, size_t trailerBytes, uint64_t seq);
  // Throws when rank `r` (first <= r < end), whose input this rank reads, published it for another
  // call: its trailer is not this call's where this rank's count puts it.
  // For a variable-count call, also that their digest of the counts is `digest`, this rank's.
  template <bool kVariable>
  void checkTrailers(uint64_t seq, uint64_t digest, int first, int end, const Region& region, const CollCall& call,
                     size_t bytes) const;
  // Throws when rank `r` (first <= r < end) put another digest of the counts after its input on
  // inline line `line` than this rank's, `mine` (a variable-count call; the stamps matched already).
  void checkInlineDigests(uint64_t mine, int first, int end, int line, const CollCall& call, size_t bytes) const;
  // Throws collRemoteError: `peer` passed other recvcounts for this variable-count call.
  [[noreturn]] void throwCountsMismatch(int peer, const CollCall& call) const;
  // Throws collRemoteError naming the peer's call (its record, or the tag its bytes carry, where
  // known: 0 when not) and this rank's.
  [[noreturn]] void throwMismatch(int peer, uint64_t tagInItsBytes, const CollCall& call) const;
  // Waits until every peer's flag has passed `lastUse` (from the flags seen before where it can).
  void waitForReaders(uint64_t lastUse, PeerWaiter& waiter);
  // Waits until every peer has passed `lastUse`, the previous call on this inline or tiny call's
  // entry, watching the peers' flags only (see publishStamped).
  void waitForStampedReaders(uint64_t lastUse, PeerWaiter& waiter);
  // Waits until rank `only`'s flag (every rank's, for -1) has reached seq: for an inline or tiny
  // call, the stamp of its entry, which must then equal `stamp`; for a call in a region, then
  // checks the trailers. Either way it checks that what they published is this call's, and for a
  // variable-count call that their digest of the counts is `digest`, this rank's.
  template <bool kVariable>
  void waitForRanks(uint64_t seq, uint64_t stamp, uint64_t digest, int only, const Region& region, const CollCall& call,
                    size_t bytes, PeerWaiter& waiter);
  // The two rings of stamped small inputs in each rank's area (transport::InlineInput lines and
  // transport::TinyInputs entries): how many calls a ring holds, and where call `index`'s entry
  // lies; an entry has a `stamp` and its `data`. Inline and tiny calls run the same code on them,
  // instantiated for each ring, so neither pays a branch on the other's in its hot path.
  struct InlineRing {
    static constexpr int kCalls = transport::NativeArea::kInlineInputs;
    static transport::InlineInput& entry(transport::NativeArea* area, int index) { return area->inlineInputs[index]; }
  };
  struct TinyRing {
    static constexpr int kCalls = transport::NativeArea::kTinyLines * transport::TinyInputs::kPerLine;
    static transport::TinyInputs::Entry& entry(transport::NativeArea* area, int index) {
      return area->tinyInputs[index / transport::TinyInputs::kPerLine].entries[index % transport::TinyInputs::kPerLine];
    }
  };
  // Puts call `seq`'s input (`bytes`, where this rank publishes) on its entry of Ring, once the
  // entry's previous call is read, with `digest` after it for a variable-count call, and stamps it
  // with `stamp` (stampOf); returns the entry's index.
  template <class Ring, bool kVariable>
  int publishStamped(const CollCall& call, size_t bytes, uint64_t seq, uint64_t stamp, uint64_t digest,
                     PeerWaiter& waiter);
  // Waits until ranks first..end-1 have stamped entry `index` of Ring with seq, and checks, with
  // the same comparison, that they stamped it for this call: with `mine`, this rank's stamp.
  template <class Ring>
  void waitForStamps(uint64_t seq, uint64_t mine, int first, int end, int index, const CollCall& call,
                     PeerWaiter& waiter);
  // Waits until wordOf(r), for r in first..end-1, has reached seq (noting each in seen_).
  template <class WordOf>
  void waitForWords(uint64_t seq, int first, int end, WordOf wordOf, PeerWaiter& waiter);
  // A lower bound of the call `rank` runs, at least `target` if it started that call.
  uint64_t progressOf(int rank, uint64_t target) const;
  // Whether the call's input fits an entry of Ring beside its stamp. A barrier publishes nothing:
  // its stamp alone says that the rank reached it, and which call it runs.
  template <class Ring>
  static bool fitsOn(size_t inputBytes) {
    return inputBytes <= sizeof(Ring::entry(nullptr, 0).data);
  }
  // This rank's output from the inputs, as the collective's row lays it out (its layout, whether
  // it reduces): no switch on the collective.
  void computeOutput(const CollCall& call, const CollectiveRow& row, const Region& region);
  // computeOutput for the variable-count collectives: blocks at their displacements (all-gather-v)
  // or this rank's block of the reduction (reduce-scatter-v).
  void computeVariableOutput(const CollCall& call, const CollectiveRow& row, const Region& region);
  // Reduces `count` elements at `offset` of every rank's input into dst.
  void reduceAll(const CollCall& call, const Region& region, size_t offset, size_t count, void* dst);
  uint8_t* inputOf(int rank, const Region& region) const {
    if (region.tinyEntry >= 0) return TinyRing::entry(areas_[rank], region.tinyEntry).data;
    if (region.inlineLine >= 0) return InlineRing::entry(areas_[rank], region.inlineLine).data;
    return buffers_[2 * rank + region.buffer] + region.offset;
  }
  // Where this call reads `rank`'s input: its own from the caller's buffer, not from the copy it
  // has just published. That copy's lines were last read by the peers, so its stores wait for the
  // lines to come back, and a load that the store buffer cannot serve (the kernels' wider or
  // masked loads) waits with them (measured faster; docs/performance.md, "Choices in the code, and
  // the measurement behind each"). Where a reduction folds in several passes (reduceAll, more ranks
  // than the kernel's sources), an output in place, which may be any part of the caller's input
  // (reduce-scatter), is written before the last pass: there every input is read from the published
  // copies.
  const uint8_t* sourceOf(int rank, const CollCall& call, const Region& region) const;
  // How often an inline or tiny call also raises the flag (publishStamped): a divisor of each
  // ring's calls, small enough that a rank ahead by a whole ring still finds the flag well past
  // the entry it reuses.
  static constexpr uint64_t kProgressEvery = 64;
  // How many calls ahead a rank fetches inline lines and tiny entries, its own and the peers' it
  // waits for.
  static constexpr int kPrefetchCalls = 16;
  static_assert(TinyRing::kCalls % kProgressEvery == 0 && kProgressEvery < TinyRing::kCalls,
                "a rank that waits for its entry's readers must find the flag it waits for below its own call");
  static_assert(InlineRing::kCalls % kProgressEvery == 0 && kProgressEvery < InlineRing::kCalls,
                "a rank that waits for its line's readers must find the flag it waits for below its own call");

  transport::LocalMemory& memory_;
  PeerCalls* peerCalls_;
  // Every rank's area and two buffers, looked up once: a small call's latency is a few hundred
  // nanoseconds, and the lookups would be a measurable part of it.
  std::vector<transport::NativeArea*> areas_;
  std::vector<uint8_t*> buffers_;
  int rank_;
  int nranks_;
  uint64_t seq_ = 0;
  static constexpr int kSlotsPerBuffer = 8;
  static constexpr size_t kPackedMaxBytes = 256;   // the largest input packed with others in a slot
  static constexpr size_t kPackedAlignBytes = 64;  // each packed input starts a cache line
  size_t slotBytes_;                               // a small input's slot: an eighth of a buffer
  // Bytes of the previous call's slot packed so far; 0: not packing.
  size_t packedEnd_ = 0;
  uint64_t slotLastUse_[2 * kSlotsPerBuffer] = {};  // the last call that wrote into each slot
  int nextSlot_ = 0;
  int previousBuffer_ = 1;      // the buffer holding the previous call's region
  bool previousWhole_ = false;  // and whether it was the whole buffer
  std::vector<uint64_t> seen_;  // every rank's flag, as last read
  // The least of the peers' entries in seen_ when waitForStampedReaders last looked (they only
  // grow): while it is past an inline or tiny call's previous use of its entry, that call asks no
  // peer.
  uint64_t slowestSeen_ = 0;
};

// The table's entry (algorithm_table.cc).
bool oneshotCanRun(const CollCall& call, const PlanContext& ctx, std::string* why);
// Taken whenever it fits and its model beats a pipeline's (and always for a barrier).
bool oneshotEligible(const CollCall& call, const PlanContext& ctx);
double modelOneShot(const CollCall& call, const PlanContext& ctx);
std::unique_ptr<NativeRunner> makeOneShot(const NativeArgs& args);

}  // namespace coll
