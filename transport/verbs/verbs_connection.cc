#include "transport/verbs/verbs_connection.h"

#include <atomic>
#include <cstring>

namespace coll {
namespace transport {

uint64_t verbsWrId(int peerIndex, VerbsWork work, uint32_t slot) {
  return (static_cast<uint64_t>(peerIndex) << 32) | (static_cast<uint64_t>(work) << 24) | (slot & 0xffffffu);
}

void decodeVerbsWrId(uint64_t wrId, int* peerIndex, VerbsWork* work, uint32_t* slot) {
  *peerIndex = static_cast<int>(wrId >> 32);
  *work = static_cast<VerbsWork>((wrId >> 24) & 0xff);
  *slot = static_cast<uint32_t>(wrId & 0xffffff);
}

void writeVerbsCount(VerbsLink& link, VerbsPeer& peer, VerbsCountWrite& write, VerbsWork work, uint64_t count) {
  if (write.outstanding) {
    write.dirty = true;
    return;
  }
  // The count is cumulative, so a write that reads a newer count than it was posted with only
  // tells the peer sooner.
  __atomic_store_n(write.source, count, __ATOMIC_RELEASE);
  write.dirty = false;
  write.outstanding = link.postWriteLocked(peer, 0, work, 0, write.source, sizeof(uint64_t), write.remote, nullptr);
}

void verbsCountWritten(VerbsLink& link, VerbsPeer& peer, VerbsCountWrite& write, VerbsWork work, uint64_t count) {
  write.outstanding = false;
  if (write.dirty) writeVerbsCount(link, peer, write, work, count);
}

uint8_t* VerbsSendConnection::nextSlot() const {
  return peer_.sendSlots + (peer_.posted % link_.depth()) * verbsSlotStride(link_.slotBytes());
}

void* VerbsSendConnection::tryAcquire() {
  std::lock_guard<std::mutex> lock(link_.mutex());
  // The credit first, then the completions: a landing offer the receiver made before it released
  // a slot reached us before that credit did, so polling afterwards sees the offer before the slot
  // the credit frees is written (polling first, an offer and a credit landing in between sent that
  // slice to the slot).
  const uint64_t released = __atomic_load_n(peer_.creditIn, __ATOMIC_ACQUIRE);
  link_.pollLocked();
  // A credit beyond what was posted is a peer gone wrong; the domain's health check reports it.
  if (released > peer_.posted || peer_.posted - released >= static_cast<uint64_t>(link_.depth())) return nullptr;
  const uint32_t slot = static_cast<uint32_t>(peer_.posted % link_.depth());
  if (peer_.inFlight[slot]) return nullptr;
  return nextSlot();
}

void VerbsSendConnection::post(size_t bytes, uint64_t tag) {
  std::lock_guard<std::mutex> lock(link_.mutex());
  postLocked(nextSlot(), link_.regionLkey(), -1, bytes, tag);
}

bool VerbsSendConnection::acceptsExternal(const CallerBuffer& buffer) {
  std::lock_guard<std::mutex> lock(link_.mutex());
  return link_.callerMemory().cover(buffer) >= 0;
}

void VerbsSendConnection::postExternal(const void* data, size_t bytes, uint64_t tag) {
  std::lock_guard<std::mutex> lock(link_.mutex());
  VerbsCallerMemory& memory = link_.callerMemory();
  const int region = memory.find(data, bytes);
  if (region >= 0) return postLocked(data, memory.lkey(region), region, bytes, tag);
  // Not inside the buffer acceptsExternal() registered: the copy the caller would have made.
  std::memcpy(nextSlot(), data, bytes);
  postLocked(nextSlot(), link_.regionLkey(), -1, bytes, tag);
}

bool VerbsSendConnection::externalPending() const {
  // The executor waits on this before its call returns: look at the completions here rather
  // than wait for its next idle round to.
  std::lock_guard<std::mutex> lock(link_.mutex());
  link_.pollLocked();
  return peer_.callerWritesInFlight > 0;
}

void VerbsSendConnection::postLocked(const void* local, uint32_t lkey, int region, size_t bytes, uint64_t tag) {
  const uint32_t slot = static_cast<uint32_t>(peer_.posted % link_.depth());
  uint32_t imm = (static_cast<uint32_t>(VerbsImm::kData) << 30) | (peer_.posted & kVerbsSeqMask);
  const int lane = static_cast<int>(peer_.posted % peer_.qps.size());
  const size_t stride = verbsSlotStride(link_.slotBytes());
  uint64_t remote = peer_.remoteSlots + slot * stride;
  uint32_t rkey = peer_.remoteKey;
  // Into the receiver's own buffer where its landing record covers this slice and was made for
  // this call (verbs_landing.h): that write carries no tag, since nothing may land past the slice,
  // and the receiver takes its offer's. The slot's credit is taken and returned all the same.
  const bool landed = verbsLandingTarget(peer_, peer_.posted, bytes, tag, &remote, &rkey);
  // Into the slot, the tag follows the payload in the same write: from our slot's room past the
  // payload, in the registered region (the payload may be the caller's buffer).
  uint8_t* tagSource = peer_.sendSlots + slot * stride + link_.slotBytes();
  if (local == peer_.sendSlots + slot * stride) tagSource = static_cast<uint8_t*>(const_cast<void*>(local)) + bytes;
  std::memcpy(tagSource, &tag, sizeof(tag));
  if (landed) imm |= kVerbsLandedBit;
  ++peer_.posted;
  peer_.inFlight[slot] = 1;
  // From our slot or the caller's buffer alike: the receiver cannot tell them apart.
  if (!link_.postWriteFromLocked(peer_, lane, VerbsWork::kData, slot, local, lkey, static_cast<uint32_t>(bytes),
                                 tagSource, landed ? 0 : static_cast<uint32_t>(kVerbsTagBytes), remote, rkey, &imm)) {
    peer_.inFlight[slot] = 0;
    return;
  }
  if (landed) {
    peer_.landing.landedWrite[slot] = 1;
    ++peer_.landing.writesInPlace;
  }
  if (region < 0) return;
  peer_.callerRegion[slot] = region;
  ++peer_.callerWritesInFlight;
  link_.callerMemory().writePosted(region);
}

const void* VerbsRecvConnection::tryPeek(size_t* bytes, uint64_t* tag) {
  std::lock_guard<std::mutex> lock(link_.mutex());
  link_.pollLocked();
  if (peer_.released == peer_.arrived) return nullptr;
  const uint32_t slot = static_cast<uint32_t>(peer_.released % link_.depth());
  *bytes = peer_.sizes[slot];
  *tag = peer_.tags[slot];
  // A landed slice is already at its place in the executor's destination: it copies nothing.
  uint8_t* landed = peer_.landing.landedAt[slot];
  return landed != nullptr ? landed : peer_.recvSlots + slot * verbsSlotStride(link_.slotBytes());
}

void VerbsRecvConnection::release() {
  std::lock_guard<std::mutex> lock(link_.mutex());
  peer_.landing.landedAt[peer_.released % link_.depth()] = nullptr;
  ++peer_.released;
  writeVerbsCount(link_, peer_, peer_.credit, VerbsWork::kCredit, peer_.released);
}

void VerbsRecvConnection::offerLanding(void* destination, size_t totalBytes, size_t sliceBytes, bool, uint64_t tag) {
  std::lock_guard<std::mutex> lock(link_.mutex());
  offerVerbsLanding(link_, peer_, destination, totalBytes, sliceBytes, tag);
}

void VerbsRecvConnection::withdrawLanding() {
  std::lock_guard<std::mutex> lock(link_.mutex());
  withdrawVerbsLanding(link_, peer_);
}

}  // namespace transport
}  // namespace coll
