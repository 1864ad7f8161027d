// A capability of domains whose ranks map each other's memory (shared memory on one host): load
// and store access to a small area of every member, and single-copy reads out of their process
// memory. The native host algorithms run on it instead of on connections: the one-shot path
// (src/algorithms/oneshot.h) and direct reads (src/algorithms/direct_read.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace coll {
namespace transport {

// A tiny one-shot input and the call it belongs to, on one cache line: a reader that sees the
// stamp reads the input from the line it already has, one cache-line transfer instead of two (the
// flag's, then the data's). The stamp is written after the data, with release order.
struct alignas(64) InlineInput {
  std::atomic<uint64_t> stamp{0};  // the call whose input `data` holds; 0: none yet
  uint8_t data[56];
};
static_assert(sizeof(InlineInput) == 64, "an inline input is one cache line");

// Four tiny one-shot inputs (at most 8 bytes each) and their calls, on one cache line: a rank
// running behind reads one line per four calls, and the rank ahead takes it back to write once.
struct alignas(64) TinyInputs {
  struct Entry {
    std::atomic<uint64_t> stamp{0};
    uint8_t data[8];
  };
  static constexpr int kPerLine = 4;
  Entry entries[kPerLine];
};
static_assert(sizeof(TinyInputs) == 64, "four tiny inputs are one cache line");

// Which collectives a rank ran, by their index among the communicator's collectives, and their
// tags (src/call_tag.h): written by the rank at each call's start, read by its peers only when
// they wait long or doubt what they read (src/exec/peer_calls.h). Call i's tag is entry
// i % kCallRecords, and `recorded` the last call whose tag is there (release order): a reader
// takes an entry only while `recorded` says its call is one of the last kCallRecords - 1, since
// the call that rewrites the entry starts once kCallRecords - 1 later ones are recorded.
template <int kCalls>
struct CallRecords {
  std::atomic<uint64_t> recorded{0};
  std::atomic<uint64_t> tags[kCalls] = {};
};

// Room each one-shot buffer has past COLL_ONESHOT_BYTES: an input that fills the buffer is still
// followed by its call's number and tag (src/algorithms/oneshot.h).
constexpr size_t kOneshotTrailerRoom = 64;

// The words one rank publishes to the native algorithms, in memory every member maps. Addresses
// are in the publishing rank's process: peers reach them only through readMemory() and writeMemory().
struct alignas(64) NativeArea {
  static constexpr int kInlineInputs = 512;  // call s uses line s % kInlineInputs
  // The last one-shot call whose input is published in a region; inline calls raise it every
  // 64th call (algorithms/oneshot.h), so it is a lower bound of the call this rank runs.
  alignas(64) std::atomic<uint64_t> oneshotSeq{0};
  InlineInput inlineInputs[kInlineInputs];  // one-shot calls of at most 56 input bytes
  static constexpr int kTinyLines = 512;    // call s uses entry s % (kTinyLines * 4)
  TinyInputs tinyInputs[kTinyLines];        // one-shot calls of at most 8 input bytes
  // Direct reads: where this rank's buffers are for call `directPostedSeq` and the call's tag (its
  // count and datatype: src/call_tag.h), which every peer checks before it reads or writes a byte
  // of them; and how far it got.
  alignas(64) std::atomic<uint64_t> directPostedSeq{0};
  uint64_t directSendAddr = 0;
  uint64_t directRecvAddr = 0;
  uint64_t directTag = 0;
  alignas(64) std::atomic<uint64_t> directReducedSeq{0};  // its share of call s is final
  alignas(64) std::atomic<uint64_t> directDoneSeq{0};     // it finished reading peers' buffers
  // Point-to-point sends above the single-copy window where the host's ranks outnumber its
  // cores: rank 0 measures the FIFO against single copies and writes here the way it sends now,
  // per size class (log2 of the bytes); the other ranks read rank 0's and send the same way
  // (src/exec/host_engine.h). 0: nothing chosen yet.
  static constexpr int kSendPlanClasses = 48;
  static constexpr uint8_t kSendByFifo = 1;
  static constexpr uint8_t kSendBySingleCopy = 2;
  alignas(64) std::atomic<uint8_t> largeSendPlans[kSendPlanClasses] = {};
  // The same for the pairs of a variable-count all-to-all, chosen apart: its time is the whole
  // exchange's, not one send's.
  alignas(64) std::atomic<uint8_t> largeExchangePlans[kSendPlanClasses] = {};
  // Receive from any source (collRecvAny): how many host-memory sends this rank has started to
  // each rank, written by this rank alone as each send starts. A receiver compares a sender's
  // count with the messages it has taken from it: a collective's bytes share the FIFO between two
  // ranks with the sends', so what is waiting there cannot tell a receiver that a message is.
  // Communicators of more ranks than this refuse collRecvAny.
  static constexpr int kAnySourceRanks = 1024;
  alignas(64) std::atomic<uint64_t> pointToPointSent[kAnySourceRanks] = {};
  // This rank's last kCallRecords collectives.
  static constexpr int kCallRecords = 64;
  alignas(64) CallRecords<kCallRecords> calls;
};

class LocalMemory {
 public:
  virtual ~LocalMemory() = default;
  // The members, ascending (this rank among them). The native algorithms run only where they are
  // every rank of the communicator; they then index members by rank.
  virtual const std::vector<int>& localRanks() const = 0;
  virtual NativeArea* area(int rank) const = 0;
  // One of the two one-shot buffers of `rank`, of COLL_ONESHOT_BYTES each and kOneshotTrailerRoom
  // more.
  virtual uint8_t* oneshotBuffer(int rank, int which) const = 0;
  // Wakes every other member that sleeps; call after publishing what they wait for.
  virtual void ringPeers() const = 0;
  // Whether every member may copy straight out of every other's process memory (agreed by all).
  virtual bool crossMemoryReads() const = 0;
  // Copies `bytes` at `address` in rank's process into `local`; throws CollError(collRemoteError)
  // when the rank is gone or the read fails part way.
  virtual void readMemory(int rank, uint64_t address, void* local, size_t bytes) const = 0;
  // Copies `bytes` from `local` to `address` in rank's process (the same right as a read); throws
  // as readMemory.
  virtual void writeMemory(int rank, uint64_t address, const void* local, size_t bytes) const = 0;
};

}  // namespace transport
}  // namespace coll
