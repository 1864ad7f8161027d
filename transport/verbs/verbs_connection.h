// The verbs transport's host FIFOs (transport.h) to one peer, over its RC queue pairs ("lanes",
// COLL_IB_QPS_PER_CONNECTION): consecutive slots go round-robin over the lanes, as sockets do, so
// that more than one QP's worth of writes is in flight; credits, probes and notices use lane 0.
//
// Send: the slots are this rank's own registered staging buffers; post() writes slot i with
// immediate into the peer's slot i (RDMA write with immediate, inline when small enough), the
// immediate carrying the slot's sequence number and the write's last 8 bytes the slot's tag
// (transport.h), just past the payload: a slot's room is slotBytes plus kVerbsTagRoom. postExternal() makes the same write from the
// caller's buffer instead, registered for the call (verbs_caller_memory.h: zero-copy). Each lane keeps its own order
// only, so the receiver puts arrivals back in sequence order before handing them out. A slot is free again when the
// peer has released its copy (the peer's credit word here says how many it released) and the device has finished
// reading ours (its completion).
// Receive: the peer's writes land in this rank's slots; each consumes one posted receive, whose
// completion says which sequence number arrived and how many bytes (the tag's 8 among them). release() returns the slot
// by an RDMA write of the count released into the sender's credit word, so the sender never
// writes into a slot still in use and never meets a receiver that is not ready. Large receives
// may land straight in the executor's destination instead (offerLanding, verbs_landing.h: zero-
// copy receives), with the same sequence numbers, credits and slots.
//
// All state is guarded by the domain's lock (VerbsLink::mutex()): the executor, the health check
// and the completion handler touch it from whichever thread calls.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "transport/transport.h"
#include "transport/verbs/verbs_api.h"
#include "transport/verbs/verbs_caller_memory.h"
#include "transport/verbs/verbs_landing.h"

namespace coll {
namespace transport {

// What a work request was for, in its wr_id (with the peer's index and the slot; for a landing
// record, its mailbox entry).
enum class VerbsWork : uint32_t {
  kData = 1,
  kCredit = 2,
  kProbe = 3,
  kNotice = 4,
  kRecv = 5,
  kLanding = 6,          // a landing record (verbs_landing.h)
  kAcknowledgement = 7,  // of the peer's landing records
};
// What a write with immediate tells the receiver, in the immediate's top two bits. The other 30
// bits: for kData, the landed flag (kVerbsLandedBit) and the sequence number's low 29 bits; for
// kLanding, the record's generation's low 30 bits.
enum class VerbsImm : uint32_t { kData = 0, kGoodbye = 1, kFailed = 2, kLanding = 3 };
constexpr uint32_t kVerbsImmLowBits = (1u << 30) - 1;
constexpr uint32_t kVerbsSeqMask = kVerbsLandedBit - 1;
// A slot's room beyond its payload: the tag written after it, padded so that every slot starts on
// a cache line.
constexpr size_t kVerbsTagBytes = sizeof(uint64_t);
constexpr size_t kVerbsTagRoom = 64;
inline size_t verbsSlotStride(size_t slotBytes) { return slotBytes + kVerbsTagRoom; }

uint64_t verbsWrId(int peerIndex, VerbsWork work, uint32_t slot);
void decodeVerbsWrId(uint64_t wrId, int* peerIndex, VerbsWork* work, uint32_t* slot);

struct VerbsPeer {
  int rank = -1;
  int index = 0;
  std::vector<ibv_qp*> qps;  // the lanes; sequence number s goes on lane s % qps.size()
  uint32_t maxInline = 0;    // the smallest any lane granted
  // This rank's memory for the pair (in the domain's one registered region).
  uint8_t* recvSlots = nullptr;
  uint8_t* sendSlots = nullptr;
  uint64_t* creditIn = nullptr;   // the peer writes how many of our sends it released
  uint64_t* creditOut = nullptr;  // the source of our credit writes
  uint64_t* probeIn = nullptr;    // the peer's probes land here; nothing reads it
  // The peer's memory for the pair.
  uint64_t remoteSlots = 0;
  uint64_t remoteCredit = 0;
  uint64_t remoteProbe = 0;
  uint32_t remoteKey = 0;
  // Send side.
  uint64_t posted = 0;
  std::vector<uint8_t> inFlight;  // per slot: the device may still read it
  // Per slot: the caller-buffer registration its zero-copy write in flight reads, or -1.
  std::vector<int> callerRegion;
  int callerWritesInFlight = 0;  // zero-copy writes the device may still read
  // Receive side.
  uint64_t arrived = 0;
  uint64_t released = 0;
  std::vector<uint32_t> sizes;    // per slot: payload bytes of the arrival
  std::vector<uint64_t> tags;     // per slot: its tag
  std::vector<uint8_t> present;   // per slot: arrived ahead of an earlier sequence number on another lane
  // At most one of each in flight, so the send queue and the CQ stay bounded.
  VerbsCountWrite credit;  // of `released`, into the peer's credit word
  bool probeOutstanding = false;
  bool noticeOutstanding = false;
  bool departed = false;  // said goodbye: its QP may vanish, and probes to it stop
  Deadline nextProbe{};
  VerbsLanding landing;  // zero-copy receives, both ways (verbs_landing.h)
};

// What the connections need from their domain.
class VerbsLink {
 public:
  virtual ~VerbsLink() = default;
  virtual std::mutex& mutex() = 0;
  // Drains the CQ (lock held).
  virtual void pollLocked() = 0;
  // Posts an RDMA write (with immediate when `imm` is set) from `local` (registered, or inline);
  // a refused post fails the domain (lock held). True when posted.
  virtual bool postWriteLocked(VerbsPeer& peer, int lane, VerbsWork work, uint32_t slot, const void* local,
                               uint32_t bytes, uint64_t remote, const uint32_t* imm) = 0;
  // The same from memory registered under `lkey` (the region's, regionLkey(), or a caller's buffer's)
  // into the peer's memory that `rkey` opens (its region's, or a landing's), followed in the same
  // write by `trailerBytes` at `trailer` in the region (a slot's tag; none when 0).
  virtual bool postWriteFromLocked(VerbsPeer& peer, int lane, VerbsWork work, uint32_t slot, const void* local,
                                   uint32_t lkey, uint32_t bytes, const void* trailer, uint32_t trailerBytes,
                                   uint64_t remote, uint32_t rkey, const uint32_t* imm) = 0;
  virtual uint32_t regionLkey() const = 0;
  // Fails the domain with `message` and moves the peer's QPs to the error state, so that nothing
  // the peer writes lands in this rank's memory any more (lock held).
  virtual void breakPeerLocked(VerbsPeer& peer, const std::string& message) = 0;
  // The per-call registrations of callers' buffers (zero-copy sends and receives).
  virtual VerbsCallerMemory& callerMemory() = 0;
  virtual size_t slotBytes() const = 0;
  virtual int depth() const = 0;
};

// Writes `count` into the peer's word (lock held): posts the write, or notes that one is due when
// a write is in flight (`write.dirty`; its completion calls this again with the count then).
void writeVerbsCount(VerbsLink& link, VerbsPeer& peer, VerbsCountWrite& write, VerbsWork work, uint64_t count);
// Its write completed: the next one goes now if the count grew meanwhile (`count`, the current one).
void verbsCountWritten(VerbsLink& link, VerbsPeer& peer, VerbsCountWrite& write, VerbsWork work, uint64_t count);

class VerbsSendConnection : public SendConnection {
 public:
  VerbsSendConnection(VerbsLink& link, VerbsPeer& peer) : link_(link), peer_(peer) {}
  void* tryAcquire() override;
  void post(size_t bytes, uint64_t tag) override;
  size_t slotBytes() const override { return link_.slotBytes(); }
  int depth() const override { return link_.depth(); }
  // Zero-copy (verbs_caller_memory.h): a buffer of at least COLL_IB_ZCOPY_BYTES is registered
  // for the call; the slice is then written from it into the peer's slot, as a slot would be.
  bool acceptsExternal(const CallerBuffer& buffer) override;
  void postExternal(const void* data, size_t bytes, uint64_t tag) override;
  bool externalPending() const override;

 private:
  // Writes the next sequence number's slice from `local` (registered under `lkey`) into the
  // peer's slot with `tag` after it, or into its buffer where its landing record covers the
  // slice and was made for the call `tag`; `region` is the caller registration it reads, or -1
  // for our own slot.
  void postLocked(const void* local, uint32_t lkey, int region, size_t bytes, uint64_t tag);
  uint8_t* nextSlot() const;

  VerbsLink& link_;
  VerbsPeer& peer_;
};

class VerbsRecvConnection : public RecvConnection {
 public:
  VerbsRecvConnection(VerbsLink& link, VerbsPeer& peer) : link_(link), peer_(peer) {}
  const void* tryPeek(size_t* bytes, uint64_t* tag) override;
  void release() override;
  size_t slotBytes() const override { return link_.slotBytes(); }
  // Zero-copy receives (verbs_landing.h): offers of at least COLL_IB_ZCOPY_BYTES are announced to
  // the sender, which then writes their slices straight into the destination.
  bool acceptsLanding() const override { return link_.callerMemory().threshold() > 0; }
  void offerLanding(void* destination, size_t totalBytes, size_t sliceBytes, bool holdLater, uint64_t tag) override;
  void withdrawLanding() override;

 private:
  VerbsLink& link_;
  VerbsPeer& peer_;
};

}  // namespace transport
}  // namespace coll
