// A connection between two ranks, as the host executor drives it: a FIFO of fixed-size slots
// with credits. The sender acquires a free slot, fills (or reduces into) it and posts it; the
// receiver peeks at the oldest posted slot, consumes it in place and releases it. Both sides are
// non-blocking: the executor progresses many connections at once and sleeps on the rank's
// Doorbell when none can move, so a transport must ring the peer's doorbell whenever it posts or
// releases. Every transport that carries host memory (self, shm, net, verbs) offers these two
// classes from its domain (domain.h).
//
// Every slot carries a tag beside its bytes: 64 bits the core gives each post (the call the slot
// belongs to: src/call_tag.h) and the transport hands back with the slot, untouched, so that the
// receiver checks that the sender ran the same call before it takes a byte. A transport that
// writes into the receiver's memory by itself (a landing, below) does so only for slots whose
// tag is the one the receiver offered the landing for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace coll {
namespace transport {

// The caller's buffer (send or receive, whole) that a slice sent from the caller's memory lies in.
struct CallerBuffer {
  const void* base = nullptr;
  size_t bytes = 0;
};

class SendConnection {
 public:
  virtual ~SendConnection() = default;
  // A free slot of slotBytes() to write into, or nullptr when every slot is still in flight.
  virtual void* tryAcquire() = 0;
  // Publishes the slot returned by the last tryAcquire() holding `bytes` bytes (<= slotBytes()),
  // with the tag of the call it belongs to.
  virtual void post(size_t bytes, uint64_t tag) = 0;
  virtual size_t slotBytes() const = 0;
  virtual int depth() const = 0;

  // Zero-copy sends, for transports that can send from any memory (sockets: a system call; verbs:
  // an RDMA write from the caller's buffer, registered for the call): after a successful
  // tryAcquire(), the caller asks acceptsExternal() with the whole buffer the next slice lies in,
  // and on true posts the slice with postExternal() straight from that buffer instead of filling
  // the slot. That memory must stay unchanged until externalPending() turns false, which the
  // executor waits for before a call returns. A transport that must prepare the memory (verbs
  // registers it, once per call for all its slices) does so in acceptsExternal(), so that a
  // refusal leaves the slot to be filled as usual, at no cost beyond the copy.
  virtual bool acceptsExternal(const CallerBuffer& buffer) {
    (void)buffer;
    return false;
  }
  virtual void postExternal(const void* data, size_t bytes, uint64_t tag) { (void)data, (void)bytes, (void)tag; }
  virtual bool externalPending() const { return false; }
  // The call that posted frames with postExternal() failed and returns without waiting for them:
  // from now on the transport must not read the caller's memory (the communicator has failed, so
  // those frames need not go out). Sockets copy from it while sending; verbs keeps it registered
  // and shared memory's receiver reads it through the kernel, which neither fault on freed memory.
  virtual void abandonExternal() {}

  // Single-copy sends within a host (shared memory where ranks may read each other's memory):
  // whether a message of `messageBytes` should be posted with postExternal as a reference to the
  // caller's memory, which the receiver copies straight out of (cross-memory attach) and then
  // acknowledges; until then externalPending() stays true. The executor asks for point-to-point
  // calls only, where one copy instead of two (into the slot, out of it) is the whole difference,
  // for messages too small for the FIFO's pipeline to overlap its two copies; collectives keep
  // their FIFO pipelines and choose direct reads by measurement.
  virtual bool singleCopyFor(size_t messageBytes) const {
    (void)messageBytes;
    return false;
  }
  // Whether a message of `messageBytes` could go by a single copy at all: from the window's lower
  // bound up, past its top. The host engine asks for this instead of singleCopyFor when it measures
  // single copies against the FIFO for large messages (host_engine.h).
  virtual bool singleCopyPossible(size_t messageBytes) const {
    (void)messageBytes;
    return false;
  }
};

class RecvConnection {
 public:
  virtual ~RecvConnection() = default;
  // The oldest posted slot, its byte count and its tag, or nullptr when none has arrived yet. Both
  // come from another process: the caller checks them against what it expects.
  virtual const void* tryPeek(size_t* bytes, uint64_t* tag) = 0;
  // Returns the slot from the last tryPeek() to the sender.
  virtual void release() = 0;
  // The sender cuts data into slots of this size; both ends use it to agree on slices.
  virtual size_t slotBytes() const = 0;

  // Receiving straight into the caller's memory, for transports that move bytes with a system call
  // (sockets), so that a frame is read once instead of into a slot and then copied out. The
  // executor announces that the next frames it will take (from the one tryPeek returns next) are
  // the slices of `totalBytes` bytes bound for `destination`, each `sliceBytes` long but the last,
  // of the call `tag`. The transport may then read such a frame, if it carries that tag and is
  // exactly the size expected at its place, straight into its place there; tryPeek returns that
  // place, and the executor, finding its data already at home, copies nothing. Frames that came
  // in before the offer stay in their slots. withdrawLanding() ends the offer before the call
  // returns, whether it succeeded or not: from then on nothing writes into `destination`, and any
  // frame already read there but not yet taken is moved into its slot.
  // holdLater: until the executor has taken every frame of this landing, frames past it may stay
  // in the transport instead of being read ahead into slots, so that they can land in place in
  // their own step or call. The executor asks it in a batch that also sends: there a frame read
  // ahead costs a copy on a rank that is busy; a rank that only receives reads ahead while the
  // bytes are fresh (holding back on a rank that only receives measured slower:
  // docs/performance.md, "What we tried and why it lost", "Sockets"). Transports that read nothing
  // ahead ignore it.
  virtual bool acceptsLanding() const { return false; }
  virtual void offerLanding(void* destination, size_t totalBytes, size_t sliceBytes, bool holdLater, uint64_t tag) {
    (void)destination, (void)totalBytes, (void)sliceBytes, (void)holdLater, (void)tag;
  }
  virtual void withdrawLanding() {}
};

// A transport whose bytes must be moved by someone (sockets): while a collective runs, the
// executor drives it from its wait loop, which costs no thread switch; while the executor sleeps,
// or between calls, the transport's own progress thread does.
class ProgressDriver {
 public:
  virtual ~ProgressDriver() = default;
  // Moves whatever can move without blocking (called by the executor on idle rounds).
  virtual void progressOnce() = 0;
  enum class Executor { kDriving, kAsleep, kReturned };
  // kDriving: the executor began a call or woke up; kAsleep: it sleeps on its doorbell until the
  // transport rings it; kReturned: the call ended (sends may still be in flight).
  virtual void executorState(Executor state) = 0;
};

}  // namespace transport
}  // namespace coll
