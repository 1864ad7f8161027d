// The shared-memory FIFO between two ranks of one host, as both ends see it: the receiver's
// release counter, one control line per slot and the slots, all in the receiver's segment
// (shm_domain.h), plus the doorbell of the other end, which each side rings after it posts or
// releases a slot.
//
// Why a control line per slot rather than a head counter and a size array: the receiver learns
// that slot s is posted, how many bytes it holds and (for a small message) the bytes themselves
// from one cache line, which crosses between the cores once. With a shared head counter it took
// three lines (head, size, data), two of them one after the other: for an 8-byte send that was
// most of the time. The sender reads the receiver's counter only when the ring looks full.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/doorbell.h"
#include "transport/landing.h"
#include "transport/transport.h"

namespace coll {
namespace transport {

struct alignas(64) ShmFifoHeader {
  std::atomic<uint64_t> tail{0};  // slots released by the receiver
  char padTail[56];
  std::atomic<uint64_t> singleCopiesDone{0};  // single-copy slots the receiver has read (ack)
  char padDone[56];
};

// Posting slot s (counting from 0) stores s + 1 in `posted`, last: the receiver waits for the
// value it expects, so a line from the previous lap (or zeroed memory) never passes for a post.
//
// A single-copy slot (transport.h, singleCopyFor) carries no payload: `bytes` has
// kSingleCopyFlag set, and inlineData begins with the address of the bytes in the sender's memory.
// It may stand for several slices of one message (bytes above slotBytes: the executor posts the
// rest of a send step at once): the receiver hands them out one slice of slotBytes at a time, and
// releases the slot after the last. Why: posted slice by slice, a 64 MiB sendrecv's slices went
// out as the FIFO freed, and the two ranks, each reading while the other posted, fell into reads
// of a few slices; one reference for the message is read with one system call
// (docs/performance.md, "Choices in the code, and the measurement behind each").
//
// `tag` is the sender's tag for the slot (transport.h): on the control line, so that the receiver
// checks it from the line it reads anyway, before it copies a byte.
struct alignas(64) ShmSlotControl {
  static constexpr size_t kInlineBytes = 40;
  static constexpr uint64_t kSingleCopyFlag = 1ull << 63;
  std::atomic<uint64_t> posted{0};
  uint64_t bytes = 0;
  uint64_t tag = 0;
  uint8_t inlineData[kInlineBytes];  // the payload itself when it is at most kInlineBytes
};
static_assert(sizeof(ShmSlotControl) == 64, "a slot's control is one cache line");

// Bytes one FIFO of `depth` slots of `slotBytes` takes in a segment (header, controls, slots).
size_t shmFifoBytes(int depth, size_t slotBytes);

struct ShmFifoView {
  ShmFifoView(uint8_t* fifo, int depth, size_t slotBytes, Doorbell* otherEnd);
  uint8_t* slot(uint64_t index) const { return data + (index % depth) * slotBytes; }
  ShmSlotControl& control(uint64_t index) const { return controls[index % depth]; }

  ShmFifoHeader* header;
  ShmSlotControl* controls;
  uint8_t* data;
  size_t slotBytes;
  int depth;
  Doorbell* bell;
};

class ShmSendConnection : public SendConnection {
 public:
  // Messages of singleCopyMin..singleCopyMax bytes go by a single copy where `window` (singleCopyMin
  // 0: none at all, as where the receiver may not read this process's memory); from singleCopyMin
  // up they may when the engine asks (singleCopyPossible).
  ShmSendConnection(uint8_t* fifo, int depth, size_t slotBytes, Doorbell* receiverBell, size_t singleCopyMin,
                    size_t singleCopyMax, bool window);
  void* tryAcquire() override;
  void post(size_t bytes, uint64_t tag) override;
  size_t slotBytes() const override { return fifo_.slotBytes; }
  int depth() const override { return fifo_.depth; }
  // Single copies only (transport.h): postExternal is called for slices the executor chose by
  // singleCopyFor() or singleCopyPossible(), never because acceptsExternal() says so.
  bool singleCopyFor(size_t messageBytes) const override {
    return window_ && singleCopyMin_ > 0 && messageBytes >= singleCopyMin_ && messageBytes <= singleCopyMax_;
  }
  bool singleCopyPossible(size_t messageBytes) const override {
    return singleCopyMin_ > 0 && messageBytes >= singleCopyMin_;
  }
  void postExternal(const void* data, size_t bytes, uint64_t tag) override;
  bool externalPending() const override;

 private:
  void publish(ShmSlotControl& control, uint64_t bytes, uint64_t tag);
  ShmFifoView fifo_;
  uint64_t head_ = 0;
  uint64_t knownTail_ = 0;  // the receiver's counter when last read: slots below it are free
  size_t singleCopyMin_;
  size_t singleCopyMax_;
  bool window_;
  uint64_t singleCopiesPosted_ = 0;
};

class ShmRecvConnection : public RecvConnection {
 public:
  // senderPid: whose memory a single-copy slot refers to.
  ShmRecvConnection(uint8_t* fifo, int depth, size_t slotBytes, Doorbell* senderBell, int senderPid);
  const void* tryPeek(size_t* bytes, uint64_t* tag) override;
  void release() override;
  size_t slotBytes() const override { return fifo_.slotBytes; }
  // A single-copy slot is read straight into its place in the caller's memory when an offer
  // covers it; other slots are consumed where they are, as always.
  bool acceptsLanding() const override { return true; }
  void offerLanding(void* destination, size_t totalBytes, size_t sliceBytes, bool holdLater, uint64_t tag) override;
  void withdrawLanding() override { landing_ = LandingOffer{}; }
  uint64_t receivedInPlace() const { return receivedInPlace_.load(std::memory_order_relaxed); }
  uint64_t singleCopyReads() const { return singleCopyReads_.load(std::memory_order_relaxed); }

 private:
  // The next slice of the single-copy slot at tail_ (`postBytes` in all, `consumed_` of them
  // taken): read from the sender's memory once, the whole slot with the run of slots that
  // continue it into a landing that covers them, else this slice alone into its landing place or
  // the slot; says where it lies.
  const void* fetchSingleCopy(const ShmSlotControl& control, size_t postBytes, size_t sliceBytes);
  ShmFifoView fifo_;
  uint64_t tail_;
  int senderPid_;
  LandingOffer landing_;
  // Slices handed out and released so far (a landing counts slices, as the executor does), and
  // the bytes of slot tail_ among them.
  uint64_t slices_ = 0;
  size_t consumed_ = 0;
  // What the last tryPeek handed out: its bytes, whether from a single-copy slot, and the bytes
  // of that slot (0 for a FIFO slot).
  size_t peekedBytes_ = 0;
  bool peekedSingleCopy_ = false;
  size_t peekedPostBytes_ = 0;
  // Slots tail_..fetchedEnd_-1 are single copies already read whole (a run of them is read at
  // once), each to fetchedAt_[slot % depth], its place in a landing; and slice fetchedSlice_ - 1
  // was read on its own, into its landing place or the slot, to fetchedSliceAt_.
  uint64_t fetchedEnd_ = 0;
  std::vector<uint8_t*> fetchedAt_;
  uint64_t fetchedSlice_ = 0;
  uint8_t* fetchedSliceAt_ = nullptr;
  uint64_t singleCopiesDone_ = 0;             // this end's count of the header's singleCopiesDone
  std::atomic<uint64_t> receivedInPlace_{0};  // single-copy slices read into a landing (usage())
  std::atomic<uint64_t> singleCopyReads_{0};  // reads from the sender's buffer, wherever to (usage())
};

}  // namespace transport
}  // namespace coll
