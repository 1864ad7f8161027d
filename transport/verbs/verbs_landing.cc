#include "transport/verbs/verbs_landing.h"

#include <cstring>

#include "common/error.h"
#include "transport/verbs/verbs_connection.h"

namespace coll {
namespace transport {
namespace {

constexpr size_t kWordBytes = 64;  // a word on its own cache line, as the domain's credit words
// The largest landing a record may describe: far beyond any buffer, and small enough that the
// range's arithmetic cannot overflow whatever a peer writes.
constexpr uint64_t kMaxLandingBytes = uint64_t{1} << 50;

std::string describeOffer(const VerbsLanding& landing) {
  if (landing.mr == nullptr) return "this rank offered no landing for it";
  const LandingOffer& o = landing.offer;
  return formatString("this rank's landing holds slots %llu..%llu of %zu bytes in slices of %zu",
                      static_cast<unsigned long long>(o.first), static_cast<unsigned long long>(o.end - 1),
                      o.totalBytes, o.sliceBytes);
}

}  // namespace

size_t verbsLandingBytes() { return 2 * kVerbsMailboxEntries * sizeof(VerbsLandingRecord) + 2 * kWordBytes; }

void placeVerbsLanding(VerbsLanding& landing, uint8_t* base, int depth) {
  landing.mailbox = reinterpret_cast<VerbsLandingRecord*>(base);
  landing.recordsOut = landing.mailbox + kVerbsMailboxEntries;
  uint8_t* words = base + 2 * kVerbsMailboxEntries * sizeof(VerbsLandingRecord);
  landing.acknowledgedIn = reinterpret_cast<uint64_t*>(words);
  landing.acknowledgement.source = reinterpret_cast<uint64_t*>(words + kWordBytes);
  landing.landedAt.assign(depth, nullptr);
  landing.landedWrite.assign(depth, 0);
}

void offerVerbsLanding(VerbsLink& link, VerbsPeer& peer, void* destination, size_t totalBytes, size_t sliceBytes,
                       uint64_t tag) {
  VerbsLanding& l = peer.landing;
  // The executor offers again on a connection only once the previous offer's frames were taken,
  // so the previous one is done with.
  withdrawVerbsLanding(link, peer);
  const size_t threshold = link.callerMemory().threshold();
  // A slice larger than a slot is not a slice the sender cuts: the offer could never match.
  if (threshold == 0 || totalBytes < threshold || sliceBytes == 0 || sliceBytes > link.slotBytes() || peer.departed)
    return;
  // Room at the peer: it took every record but the last few, and our writes of those completed.
  // Otherwise the slots serve this offer; waiting here would gain nothing the copy does not.
  const uint64_t acknowledged = __atomic_load_n(l.acknowledgedIn, __ATOMIC_ACQUIRE);
  if (acknowledged > l.recordsSent || l.recordsSent - acknowledged >= kVerbsMailboxEntries ||
      l.recordWritesInFlight >= kVerbsMailboxEntries)
    return;
  ibv_mr* mr = link.callerMemory().registerLanding(destination, totalBytes);
  if (mr == nullptr) return;
  LandingOffer offer;
  // From the frame tryPeek returns next: earlier ones belong to the executor's earlier steps.
  offer.set(destination, totalBytes, sliceBytes, peer.released, tag);
  const uint64_t generation = l.recordsSent + 1;
  const uint32_t entry = static_cast<uint32_t>(generation % kVerbsMailboxEntries);
  VerbsLandingRecord& record = l.recordsOut[entry];
  record = VerbsLandingRecord{};
  record.generation = generation;
  record.first = offer.first;
  record.end = offer.end;
  record.sliceBytes = sliceBytes;
  record.totalBytes = totalBytes;
  record.address = reinterpret_cast<uint64_t>(destination);
  record.rkey = mr->rkey;
  record.tag = tag;
  const uint32_t imm = (static_cast<uint32_t>(VerbsImm::kLanding) << 30) | (generation & kVerbsImmLowBits);
  if (!link.postWriteLocked(peer, 0, VerbsWork::kLanding, entry, &record, sizeof(record),
                            l.remoteMailbox + entry * sizeof(VerbsLandingRecord), &imm)) {
    // The peer never learns of it, so nothing can write there (the post failed the domain).
    link.callerMemory().releaseLanding(mr);
    return;
  }
  l.recordsSent = generation;
  ++l.recordWritesInFlight;
  l.offer = offer;
  l.mr = mr;
}

void withdrawVerbsLanding(VerbsLink& link, VerbsPeer& peer) {
  VerbsLanding& l = peer.landing;
  if (l.mr == nullptr) return;
  // What arrived so far is judged under the offer it was made for.
  link.pollLocked();
  // Landed frames not taken yet (only after a failed call) move into their slots, where a later
  // tryPeek would find them: the caller may reuse its buffer once the call returns.
  for (size_t slot = 0; slot < l.landedAt.size(); ++slot) {
    if (l.landedAt[slot] == nullptr) continue;
    std::memcpy(peer.recvSlots + slot * verbsSlotStride(link.slotBytes()), l.landedAt[slot], peer.sizes[slot]);
    l.landedAt[slot] = nullptr;
  }
  ibv_mr* mr = l.mr;
  l.mr = nullptr;
  l.offer = LandingOffer{};
  // Its key opens nothing from now on: a write the peer still makes under it fails there.
  if (!link.callerMemory().releaseLanding(mr))
    link.breakPeerLocked(peer, formatString("verbs connection to rank %d: ibv_dereg_mr of a receive buffer failed, so "
                                            "its key may still open it: the queue pairs to that rank were stopped",
                                            peer.rank));
}

std::string acceptVerbsArrival(VerbsPeer& peer, uint64_t seq, uint32_t bytes, bool landed, int depth) {
  VerbsLanding& l = peer.landing;
  const size_t slot = static_cast<size_t>(seq % static_cast<uint64_t>(depth));
  l.landedAt[slot] = nullptr;
  if (!landed) return "";
  // The immediate says the bytes are in our buffer: only where our live offer expects exactly them.
  // The sender landed them only for the call the offer was made for, so they carry its tag.
  uint8_t* place = l.mr != nullptr ? l.offer.placeOf(seq, bytes, l.offer.tag) : nullptr;
  if (place == nullptr)
    return formatString("slot %llu of %u bytes was written into this rank's receive buffer, but %s",
                        static_cast<unsigned long long>(seq), bytes, describeOffer(l).c_str());
  l.landedAt[slot] = place;
  ++l.receivedInPlace;
  return "";
}

std::string takeVerbsLandingRecord(VerbsLink& link, VerbsPeer& peer, uint32_t imm) {
  VerbsLanding& l = peer.landing;
  const uint64_t generation = l.recordsTaken + 1;
  if ((generation & kVerbsImmLowBits) != imm)
    return formatString("a landing record came out of turn (generation bits %u, expected %llu)", imm,
                        static_cast<unsigned long long>(generation));
  // A copy: the entry is the peer's to reuse once we acknowledge it.
  const VerbsLandingRecord record = l.mailbox[generation % kVerbsMailboxEntries];
  LandingOffer target;
  if (record.generation == generation && record.sliceBytes > 0 && record.sliceBytes <= link.slotBytes() &&
      record.totalBytes > 0 && record.totalBytes <= kMaxLandingBytes && record.first <= UINT64_MAX - record.totalBytes)
    target.set(nullptr, record.totalBytes, record.sliceBytes, record.first, record.tag);
  if (target.totalBytes == 0 || target.end != record.end)
    return formatString(
        "a landing record does not add up (generation %llu where %llu was due, slots %llu..%llu for %llu bytes in "
        "slices of %llu)",
        static_cast<unsigned long long>(record.generation), static_cast<unsigned long long>(generation),
        static_cast<unsigned long long>(record.first), static_cast<unsigned long long>(record.end),
        static_cast<unsigned long long>(record.totalBytes), static_cast<unsigned long long>(record.sliceBytes));
  // The newest record replaces the one before: their ranges follow each other, so the older one
  // covers nothing still to be sent.
  l.target = target;
  l.targetAddress = record.address;
  l.targetRkey = record.rkey;
  l.recordsTaken = generation;
  writeVerbsCount(link, peer, l.acknowledgement, VerbsWork::kAcknowledgement, generation);
  return "";
}

bool verbsLandingTarget(const VerbsPeer& peer, uint64_t seq, size_t bytes, uint64_t tag, uint64_t* remote,
                        uint32_t* rkey) {
  const VerbsLanding& l = peer.landing;
  const size_t offset = l.target.offsetOf(seq, bytes, tag);
  if (offset == LandingOffer::kNowhere) return false;
  // The address came from the peer: its device checks the write against the key's registration,
  // so a wrong one fails the write there, never lands outside what the peer registered.
  *remote = l.targetAddress + offset;
  *rkey = l.targetRkey;
  return true;
}

}  // namespace transport
}  // namespace coll
