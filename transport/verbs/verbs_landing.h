// Zero-copy receives over verbs (transport.h, offerLanding): large slices RDMA-written by the
// sender straight into the receiver's output buffer, instead of into the receiver's registered
// slot and then copied out by its executor. With zero-copy sends (verbs_caller_memory.h) at the
// other end, the bytes move once, from the sender's buffer to the receiver's.
//
// The protocol, for one direction of one pair (R receives from S; both roles exist on each rank):
//   1. Offer. R's executor says that the frames from sequence number `first` (the next tryPeek
//      returns) are the slices of `total` bytes bound for `dst`, `slice` bytes each but the last,
//      of the call `tag` (transport.h). When total >= COLL_IB_ZCOPY_BYTES, R registers
//      [dst, dst + total) for remote write, for this offer only, and RDMA-writes a record
//      {generation, first, end, slice, total, address, rkey, tag}
//      into entry generation % kVerbsMailboxEntries of a small ring in S's registered memory (its
//      mailbox for R), with immediate kLanding | generation.
//   2. Record. S learns of it from the receive completion that the write with immediate makes, so
//      it never reads an entry that is still being written (the completion comes after the bytes).
//      It checks the record (the next generation in turn, a range that adds up, a slice no larger
//      than a slot), keeps it as its one live record, and acknowledges: it writes the count of
//      records taken into a word of R's. R never has more than kVerbsMailboxEntries records
//      unacknowledged, nor that many record writes uncompleted, so it never overwrites an entry S
//      has not copied out, never finds S without a posted receive for it (S reposts the receive
//      before it acknowledges), and never overfills its send queue.
//   3. Send. For sequence number s, when the live record covers s, the slice is exactly the size
//      the record expects there and S's call has the record's tag (LandingOffer::offsetOf), S
//      writes it to address + (s - first) * slice under the record's rkey, with the data
//      immediate's landed bit set and no tag after it, from its slot or from the caller's
//      registered buffer alike; otherwise into R's slot as before, its tag after it. A slice of
//      another call than R's (a count or datatype that differs) thus never lands in R's buffer:
//      it goes to the slot, where R's executor reads its tag and fails. Credits and
//      slots stay per sequence number: a landed frame takes and returns its slot's credit as any
//      other, so the FIFO's accounting does not change. A record S sees after it posted part of
//      its range covers the rest: R meets a mix of slot and landed arrivals.
//   4. Arrival. A landed arrival must fall inside R's current offer at exactly the size expected
//      there (LandingOffer::placeOf), else the domain fails naming S: bytes and immediates from
//      the network are never trusted. tryPeek hands out its place in dst, where the executor finds
//      the data at home and copies nothing.
//   5. Withdraw, before the executor's call returns, whether it succeeded or not: completions are
//      polled (so what arrived counts under its offer), landed frames not yet taken are copied into
//      their slots (there are some only after a failure), and the registration goes.
//
// Why nothing writes into dst once withdraw has returned:
//   - After a call that succeeded every frame of each of its offers was taken, so S has posted its
//     whole range and will never use that record again: a record is used only for sequence numbers
//     in its own range, and the ranges of successive offers on a connection follow each other
//     (the executor makes a new offer on a connection only once the frames of the previous one
//     were taken). A record that reaches S after S passed its range is kept and never matches.
//   - Whatever happened, the registration is deregistered (ibv_dereg_mr), which invalidates its
//     rkey: a write S still makes under it (possible only after a failed call, which already failed
//     the communicator) fails at S with a remote access error and the pair's link fails.
//   - If the deregistration itself fails the key might still open dst: the pair's QPs are moved to
//     the error state, which stops the peer's writes at this end.
//   - Generations: S accepts record g only in turn (after g - 1, with g's low bits in the
//     immediate and g in the entry), and keeps only the newest, so a stale record (an earlier
//     offer's, or an entry's previous contents) is never taken for a newer one.
// What a peer that lies can do: set the landed flag on a frame that went into the slot, within
// the offer, so that the executor takes dst's old bytes; no worse than sending wrong bytes into a
// slot. It cannot make R read or write outside what R registered: a landed frame is handed out
// only at a place R's own offer computes, and S's writes are checked by R's device against R's
// registration.
//
// All of it runs under the domain's lock (VerbsLink::mutex()), like the rest of the transport.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "transport/landing.h"

namespace coll {
namespace transport {

class VerbsLink;
struct VerbsPeer;

// Records R may have outstanding at S: one per offer, and an offer follows the previous one's
// frames, so a few cover the acknowledgement's round trip. A full ring means no offer (the slots
// serve), never a wait.
constexpr uint32_t kVerbsMailboxEntries = 4;
// The landed flag of a data write's immediate (VerbsImm::kData), taken from the sequence bits.
constexpr uint32_t kVerbsLandedBit = 1u << 29;

// What R writes into S's mailbox: 64 bytes, one entry.
struct VerbsLandingRecord {
  uint64_t generation = 0;  // 1, 2, ...: R's count of records to S
  uint64_t first = 0;       // the sequence numbers [first, end) ...
  uint64_t end = 0;
  uint64_t sliceBytes = 0;  // ... are the slices of totalBytes, sliceBytes each but the last
  uint64_t totalBytes = 0;
  uint64_t address = 0;  // where in R's memory the first slice goes
  uint32_t rkey = 0;     // the key that opens [address, address + totalBytes)
  uint32_t reserved = 0;
  uint64_t tag = 0;  // the call R's executor expects these slices of (transport.h)
};
static_assert(sizeof(VerbsLandingRecord) == 64, "a mailbox entry is one cache line");

// A cumulative count written into a word of the peer's (credits, landing acknowledgements): at
// most one write in flight; a count that grows meanwhile goes out when that one completes
// (writeVerbsCount, verbs_connection.h).
struct VerbsCountWrite {
  uint64_t* source = nullptr;  // in the registered region: what the write reads
  uint64_t remote = 0;         // the peer's word
  bool outstanding = false;
  bool dirty = false;
};

// One pair's landing state, both roles, in VerbsPeer.
struct VerbsLanding {
  // This rank's memory for the pair, in the domain's registered region (placeVerbsLanding).
  VerbsLandingRecord* mailbox = nullptr;     // the peer's records for our sends land here
  VerbsLandingRecord* recordsOut = nullptr;  // the sources of our records to the peer
  uint64_t* acknowledgedIn = nullptr;        // the peer writes how many of our records it took
  uint64_t remoteMailbox = 0;                // the peer's mailbox for our records

  // Receive side: this rank's offer to the peer.
  LandingOffer offer;    // live while `mr` is
  ibv_mr* mr = nullptr;  // [offer.destination, + offer.totalBytes), remote write
  uint64_t recordsSent = 0;
  uint32_t recordWritesInFlight = 0;
  std::vector<uint8_t*> landedAt;  // per slot: its arrival's place in the offer, if it landed
  uint64_t receivedInPlace = 0;

  // Send side: the peer's newest record.
  LandingOffer target;  // no destination: the slices go to targetAddress + offset
  uint64_t targetAddress = 0;
  uint32_t targetRkey = 0;
  uint64_t recordsTaken = 0;
  VerbsCountWrite acknowledgement;
  std::vector<uint8_t> landedWrite;  // per slot: its write in flight goes into the peer's buffer
  uint64_t writesInPlace = 0;
};

// Bytes of a pair's landing memory, and where its parts lie from `base` (64-byte aligned).
size_t verbsLandingBytes();
void placeVerbsLanding(VerbsLanding& landing, uint8_t* base, int depth);

// Receive side. offer: replaces any earlier offer (withdrawing it), and makes this one when it is
// large enough, the registration succeeds and the mailbox has room; otherwise the slots serve.
void offerVerbsLanding(VerbsLink& link, VerbsPeer& peer, void* destination, size_t totalBytes, size_t sliceBytes,
                       uint64_t tag);
void withdrawVerbsLanding(VerbsLink& link, VerbsPeer& peer);
// A data arrival with full sequence number `seq`: records where a landed one lies. "" when it is
// consistent, else what is wrong (a landed arrival outside the offer).
std::string acceptVerbsArrival(VerbsPeer& peer, uint64_t seq, uint32_t bytes, bool landed, int depth);

// Send side. A record announced by an immediate with generation bits `imm`: "" when taken, else
// what is wrong with it. Call after the receive it consumed is posted again.
std::string takeVerbsLandingRecord(VerbsLink& link, VerbsPeer& peer, uint32_t imm);
// Where the slice with sequence number `seq`, `bytes` and `tag` goes when a live record covers it:
// true, with the peer's address and key.
bool verbsLandingTarget(const VerbsPeer& peer, uint64_t seq, size_t bytes, uint64_t tag, uint64_t* remote,
                        uint32_t* rkey);

}  // namespace transport
}  // namespace coll
