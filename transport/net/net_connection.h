// One direction of a socket connection to one peer: a FIFO of slots in this process's memory and
// the state of moving them over the peer's sockets. The executor fills and consumes slots through
// the SendConnection/RecvConnection interface; `pump` moves bytes between slots and sockets with
// non-blocking calls and is run by whoever holds the channel's mutex: the domain's progress
// thread, or the executor itself when it finds the mutex free (a small message then goes out or
// comes in without waking another thread).
//
// A direction holds the sockets that carry its frames (netSocketsCarrying: its own between ranks
// of one host, every socket of the pair across hosts); with S of them, slot k travels on its
// socket k mod S. Each socket keeps its frames in order, so both ends know which slot a frame
// belongs to without any extra bookkeeping, and the receiver checks each frame's sequence number
// anyway.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/landing.h"
#include "transport/net/net_wire.h"
#include "transport/transport.h"

namespace coll {
namespace transport {

// What a channel needs from its domain: a way to wake the progress thread, and somewhere to
// report a broken connection (whoever ran the pump that found it).
class NetConnectionOwner {
 public:
  virtual ~NetConnectionOwner() = default;
  virtual void wakeProgress() = 0;
  virtual void channelFailed(int peer, const std::string& reason) = 0;
};

// The FIFO slots of one direction, in this process's memory: frame `seq` uses slot seq mod depth.
struct NetSlots {
  NetSlots(int slotCount, size_t bytesPerSlot);
  size_t index(uint64_t seq) const { return seq % depth; }
  uint8_t* at(uint64_t seq) const { return memory.get() + index(seq) * slotBytes; }
  // Whether frame `seq` fits while frames from `oldestBusy` on still hold their slots.
  bool fits(uint64_t seq, uint64_t oldestBusy) const { return seq - oldestBusy < static_cast<uint64_t>(depth); }

  int depth;
  size_t slotBytes;
  std::unique_ptr<uint8_t[]> memory;
  std::vector<size_t> sizes;    // payload bytes of the frame in each slot
  std::vector<uint64_t> tags;   // and its tag (transport.h)
};

// The result of one pump: whether anything moved, and an error that ends the connection.
struct PumpResult {
  bool moved = false;
  std::string error;  // non-empty: the connection is broken (the text says why)
};

class NetSendConnection : public SendConnection {
 public:
  // Made when the executor first asks for the peer, before its sockets exist (sockets of -1):
  // slots can be filled and posted at once, and go out once attach() hands over the sockets.
  NetSendConnection(int peer, std::vector<int> fds, int depth, size_t slotBytes, NetConnectionOwner& owner);
  // The pair's sockets, once their handshakes completed, and under COLL_NET_ENCRYPT=1 each one's
  // sealing cipher (else none). Caller holds mutex().
  void attach(const std::vector<int>& fds, std::vector<std::unique_ptr<RecordCipher>> ciphers = {});
  bool attached() const { return attached_.load(std::memory_order_acquire); }

  // SendConnection, for the executor.
  void* tryAcquire() override;
  void post(size_t bytes, uint64_t tag) override;
  size_t slotBytes() const override { return slots_.slotBytes; }
  int depth() const override { return slots_.depth; }
  bool acceptsExternal(const CallerBuffer&) override { return true; }
  void postExternal(const void* data, size_t bytes, uint64_t tag) override;
  bool externalPending() const override {
    return !abandoned_.load(std::memory_order_acquire) &&
           completed_.load(std::memory_order_acquire) < externalEnd_.load(std::memory_order_relaxed);
  }
  // Waits for a pump in progress, after which nothing is sent any more (transport.h).
  void abandonExternal() override;

  // Writes what the sockets accept. Caller holds mutex(). Errors also go to the owner.
  PumpResult pump();
  // Whether its socket s (an index among this connection's sockets) has a frame waiting for room
  // (the progress thread polls POLLOUT). Call with mutex() held: pump() changes what it reads.
  bool wantsWrite(int s) const;
  // Every posted slot has gone out, or nothing more will (abandonExternal).
  bool drained() const {
    return abandoned_.load(std::memory_order_acquire) ||
           completed_.load(std::memory_order_acquire) == posted_.load(std::memory_order_acquire);
  }
  // The closing frame for socket s (a sealed record under COLL_NET_ENCRYPT=1), once every posted
  // frame went out and nothing pumps any more.
  std::vector<uint8_t> closingFrame(int s);
  std::mutex& mutex() { return mutex_; }

 private:
  struct SocketState {
    int fd;
    uint64_t seq;   // the frame this socket sends next (or is sending)
    size_t offset;  // bytes of that frame (header + payload) already written
    // Under COLL_NET_ENCRYPT=1: the sealing cipher, and the frame `sealedSeq` encrypted into
    // `sealed` with its authentication tag, sealed once however many writes it takes.
    std::unique_ptr<RecordCipher> cipher;
    std::unique_ptr<uint8_t[]> sealedMemory;
    uint8_t* sealed = nullptr;  // sealedMemory, aligned to kNetFrameAlign
    uint64_t sealedSeq = ~uint64_t{0};
    uint8_t authTag[kRecordTagBytes] = {};
  };
  // Encrypts frame s.seq, whose header is final, into s.sealed (once per frame).
  void sealFrame(SocketState& s, const NetFrameHeader& header, const uint8_t* data);
  // Where frame `seq`'s payload is: the caller's memory for an external post, else the slot.
  const uint8_t* payload(uint64_t seq) const {
    const uint8_t* external = external_[slots_.index(seq)];
    return external != nullptr ? external : slots_.at(seq);
  }
  void publish(size_t bytes, uint64_t tag, const void* external);

  int peer_;
  NetConnectionOwner& owner_;
  NetSlots slots_;
  std::vector<const uint8_t*> external_;  // per slot: the caller's memory it was posted from, or null
  std::atomic<uint64_t> externalEnd_{0};  // one past the last externally posted frame
  std::vector<uint8_t> sent_;             // per slot: fully written (pump only)
  std::vector<SocketState> sockets_;
  std::atomic<uint64_t> posted_{0};     // written by the executor
  std::atomic<uint64_t> completed_{0};  // written by pump: slots below are free again
  std::atomic<bool> attached_{false};
  std::atomic<bool> abandoned_{false};  // abandonExternal(): pump sends nothing more
  std::mutex mutex_;
};

class NetRecvConnection : public RecvConnection {
 public:
  // Like NetSendConnection: nothing arrives until attach(), which takes the opening ciphers.
  NetRecvConnection(int peer, std::vector<int> fds, int depth, size_t slotBytes, NetConnectionOwner& owner);
  void attach(const std::vector<int>& fds, std::vector<std::unique_ptr<RecordCipher>> ciphers = {});
  bool attached() const { return attached_.load(std::memory_order_acquire); }

  // RecvConnection, for the executor.
  const void* tryPeek(size_t* bytes, uint64_t* tag) override;
  void release() override;
  size_t slotBytes() const override { return slots_.slotBytes; }
  bool acceptsLanding() const override { return true; }
  void offerLanding(void* destination, size_t totalBytes, size_t sliceBytes, bool holdLater, uint64_t tag) override;
  void withdrawLanding() override;
  uint64_t receivedInPlace() const { return receivedInPlace_.load(std::memory_order_relaxed); }

  // Reads what the sockets have, as long as there are free slots. Caller holds mutex(). Errors
  // also go to the owner.
  PumpResult pump();
  // Whether the progress thread should poll socket s for input: it has room, or it must notice
  // an end of stream. Call with mutex() held, like wantsWrite.
  bool wantsRead(int s) const;
  // The peer said goodbye on every socket (it destroyed its communicator normally).
  bool departed() const { return departed_.load(std::memory_order_acquire); }
  std::mutex& mutex() { return mutex_; }

 private:
  struct SocketState {
    int fd;
    uint64_t seq;       // the frame this socket receives next
    size_t headerGot;   // bytes of its header read so far
    size_t payloadGot;  // bytes of its payload read so far
    size_t padLeft;     // padding bytes (a frame's lead or trail) to read and drop before going on
    NetFrameHeader header;
    bool closed;         // said goodbye
    uint8_t* payloadTo;  // where this frame's payload goes: its slot, or its place in a landing
    // Bytes read ahead of the frame in progress: a header is read with whatever follows it (up
    // to kStashBytes), so a small frame costs one recv() instead of two.
    std::unique_ptr<uint8_t[]> stash;
    size_t stashBegin;
    size_t stashEnd;
    // Under COLL_NET_ENCRYPT=1: the opening cipher and the frame's authentication tag, read after
    // its payload.
    std::unique_ptr<RecordCipher> cipher;
    uint8_t authTag[kRecordTagBytes] = {};
    size_t authTagGot = 0;
  };
  static constexpr size_t kStashBytes = 4096;
  // Up to `want` bytes of socket s into `to`: from the stash first; else, for a small request,
  // through the stash; else straight from the socket. recv()'s result convention.
  ssize_t receive(SocketState& s, uint8_t* to, size_t want);
  bool hasRoom(const SocketState& s) const;
  // Where the executor asked it (offerLanding's holdLater), while it has frames of its landing still
  // to take, a socket whose next frame lies past the landing is not read: that frame belongs to a
  // later step or call, and left in the kernel until then it may land in place too, where read
  // now it would wait in a slot to be copied (2 ranks over loopback, 1 MiB sendrecv: half the
  // later rank's slices). On each socket the landing's frames come first, so the landing itself
  // always completes.
  bool holdsBack(const SocketState& s) const;
  // Reads on one socket until it would block or the ring is full; returns an error or "".
  std::string pumpSocket(SocketState& s, bool* moved);
  // Decrypts and checks the frame just read (COLL_NET_ENCRYPT=1); returns an error or "".
  std::string openFrame(SocketState& s);
  // A closing frame ends socket s; the peer departed once every socket has one.
  void closeSocket(SocketState& s);

  int peer_;
  NetConnectionOwner& owner_;
  NetSlots slots_;
  std::vector<uint8_t> ready_;  // per slot: fully read (pump only)
  // Per slot: where its frame's payload lies, if not in the slot (a landing). Written by pump
  // before the frame counts as arrived, read by tryPeek after, cleared by release().
  std::vector<uint8_t*> landedAt_;
  LandingOffer landing_;                      // guarded by mutex_
  bool holdPastLanding_ = false;              // the offer's holdLater; guarded by mutex_
  std::atomic<uint64_t> receivedInPlace_{0};  // frames read into a landing (usage())
  std::vector<SocketState> sockets_;
  std::atomic<uint64_t> arrived_{0};   // written by pump: slots below are complete, in order
  std::atomic<uint64_t> consumed_{0};  // written by the executor
  // Raised by pump when it stopped for want of a free slot: a release must then wake the progress
  // thread, which does not poll that socket meanwhile.
  std::atomic<bool> stalled_{false};
  std::atomic<bool> departed_{false};
  std::string broken_;  // why the stream broke, once it did (pump only)
  std::atomic<bool> attached_{false};
  std::mutex mutex_;
};

}  // namespace transport
}  // namespace coll
