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

void sendVerbsCredit(VerbsLink& link, VerbsPeer& peer) {
  if (peer.creditOutstanding) {
    peer.creditDirty = true;
    return;
  }
  // The count is cumulative, so a credit write that reads a newer count than it was posted with
  // only returns slots sooner.
  __atomic_store_n(peer.creditOut, peer.released, __ATOMIC_RELEASE);
  peer.creditDirty = false;
  peer.creditOutstanding =
      link.postWriteLocked(peer, 0, VerbsWork::kCredit, 0, peer.creditOut, sizeof(uint64_t), peer.remoteCredit, nullptr);
}

uint8_t* VerbsSendConnection::nextSlot() const {
  return peer_.sendSlots + (peer_.posted % link_.depth()) * link_.slotBytes();
}

void* VerbsSendConnection::tryAcquire() {
  std::lock_guard<std::mutex> lock(link_.mutex());
  link_.pollLocked();
  const uint64_t released = __atomic_load_n(peer_.creditIn, __ATOMIC_ACQUIRE);
  // A credit beyond what was posted is a peer gone wrong; the domain's health check reports it.
  if (released > peer_.posted || peer_.posted - released >= static_cast<uint64_t>(link_.depth())) return nullptr;
  const uint32_t slot = static_cast<uint32_t>(peer_.posted % link_.depth());
  if (peer_.inFlight[slot]) return nullptr;
  return nextSlot();
}

void VerbsSendConnection::post(size_t bytes) {
  std::lock_guard<std::mutex> lock(link_.mutex());
  postLocked(nextSlot(), 0, -1, bytes);
}

bool VerbsSendConnection::acceptsExternal(const CallerBuffer& buffer) {
  std::lock_guard<std::mutex> lock(link_.mutex());
  return link_.callerMemory().cover(buffer) >= 0;
}

void VerbsSendConnection::postExternal(const void* data, size_t bytes) {
  std::lock_guard<std::mutex> lock(link_.mutex());
  VerbsCallerMemory& memory = link_.callerMemory();
  const int region = memory.find(data, bytes);
  if (region >= 0) return postLocked(data, memory.lkey(region), region, bytes);
  // Not inside the buffer acceptsExternal() registered: the copy the caller would have made.
  std::memcpy(nextSlot(), data, bytes);
  postLocked(nextSlot(), 0, -1, bytes);
}

bool VerbsSendConnection::externalPending() const {
  // The executor waits on this before its call returns: look at the completions here rather
  // than wait for its next idle round to.
  std::lock_guard<std::mutex> lock(link_.mutex());
  link_.pollLocked();
  return peer_.callerWritesInFlight > 0;
}

void VerbsSendConnection::postLocked(const void* local, uint32_t lkey, int region, size_t bytes) {
  const uint32_t slot = static_cast<uint32_t>(peer_.posted % link_.depth());
  const uint32_t imm = (static_cast<uint32_t>(VerbsImm::kData) << 30) | (peer_.posted & kVerbsSeqMask);
  const int lane = static_cast<int>(peer_.posted % peer_.qps.size());
  const uint64_t remote = peer_.remoteSlots + slot * link_.slotBytes();
  ++peer_.posted;
  peer_.inFlight[slot] = 1;
  // The same write, immediate and receiver slot either way: the receiver cannot tell them apart.
  const bool posted = region < 0 ? link_.postWriteLocked(peer_, lane, VerbsWork::kData, slot, local,
                                                         static_cast<uint32_t>(bytes), remote, &imm)
                                 : link_.postWriteFromLocked(peer_, lane, VerbsWork::kData, slot, local, lkey,
                                                             static_cast<uint32_t>(bytes), remote, &imm);
  if (!posted) {
    peer_.inFlight[slot] = 0;
    return;
  }
  if (region < 0) return;
  peer_.callerRegion[slot] = region;
  ++peer_.callerWritesInFlight;
  link_.callerMemory().writePosted(region);
}

const void* VerbsRecvConnection::tryPeek(size_t* bytes) {
  std::lock_guard<std::mutex> lock(link_.mutex());
  link_.pollLocked();
  if (peer_.released == peer_.arrived) return nullptr;
  const uint32_t slot = static_cast<uint32_t>(peer_.released % link_.depth());
  *bytes = peer_.sizes[slot];
  return peer_.recvSlots + slot * link_.slotBytes();
}

void VerbsRecvConnection::release() {
  std::lock_guard<std::mutex> lock(link_.mutex());
  ++peer_.released;
  sendVerbsCredit(link_, peer_);
}

}  // namespace transport
}  // namespace coll
