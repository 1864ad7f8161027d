// The flight recorder: each communicator keeps its last N calls (sequence number, operation, type,
// count, root or peer, algorithm, state and times) in a ring, so that a hang or a failure can say
// which call every rank was in (hang_diagnosis.h) and a dead job's dumps can say it afterwards
// (trace_dump.h, colltrace).
//
// The thread that makes the calls writes; the communicator's watcher thread (answering a peer's
// probe), a dump on SIGUSR1 and an abort from another thread read. Each slot sits under a version
// word, as a seqlock: the writer never waits, and a reader skips a slot it caught mid-write. The
// fields are relaxed atomics, which cost a plain store on x86, packed into a few words, so the
// record of a call is a handful of stores and one coarse clock read at its start and at its end:
// it runs on every call, small ones included, whose whole path is a few hundred instructions.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collective.h"
#include "src/algorithms/algorithm_table.h"
#include "src/coll_call.h"

namespace coll {
namespace trace {

// kQueued: a device call enqueued on its stream (the host does not see it end); kStarted: running
// on the host now; kCompleted and kFailed: returned.
enum class CallState : uint8_t { kQueued, kStarted, kCompleted, kFailed };
const char* callStateName(CallState state);
// "all_reduce", "broadcast", ... (torch's spelling, which the hang line and the dumps use): the
// collective's row's traceName.
const char* operationName(CollType type);

// One call as a reader sees it.
struct CallRecord {
  // Collectives count 1, 2, ... on every rank alike (the calls all ranks make in the same order);
  // sends and receives count on their own, since they involve only some ranks.
  uint64_t seq = 0;
  CollType type = CollType::kBarrier;
  collDataType_t datatype = collUint8;
  collRedOp_t op = collSum;
  uint64_t count = 0;
  int32_t root = -1;  // rooted collectives
  int32_t peer = -1;  // sends and receives
  bool device = false;
  CallState state = CallState::kStarted;
  collResult_t result = collSuccess;
  std::string algorithm;  // the plan's row ("ring"), "" until planned
  int64_t startNs = 0;    // CLOCK_MONOTONIC_COARSE
  int64_t endNs = 0;      // 0 while the call runs

  bool pointToPoint() const { return type == CollType::kSend || type == CollType::kRecv; }
  bool ended() const { return state == CallState::kCompleted || state == CallState::kFailed; }
};

// CLOCK_MONOTONIC_COARSE in nanoseconds: the recorder's clock, cheap enough for every call; its
// resolution (a few milliseconds) is what a hang's report needs.
int64_t coarseMonotonicNs();

class FlightRecorder {
 public:
  // capacity 0: records nothing (COLL_TRACE_BUFFER=0); others are rounded up to a power of two.
  explicit FlightRecorder(size_t capacity);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  bool enabled() const { return capacity_ > 0; }
  size_t capacity() const { return capacity_; }
  // Records a call as it starts (device calls: as they are enqueued); returns the ticket for end().
  // Inline, as end(): every call of every size comes here twice.
  uint64_t begin(const CollCall& call, bool device) {
    return capacity_ == 0 ? 0 : recordAt(call, device, coarseMonotonicNs());
  }
  // The call's end: kCompleted, kFailed, or kQueued for a device call handed to its stream, with
  // the row its plan took (Algo::kAuto when unknown).
  void end(uint64_t ticket, CallState state, collResult_t result, Algo algorithm) {
    if (capacity_ != 0)
      closeAt(ticket, state, result, algorithm, state != CallState::kQueued ? coarseMonotonicNs() : 0);
  }
  // The same for a group's sends and receives, with one clock read for them all: begin returns the
  // first call's ticket and the others follow it (one thread records a communicator's calls).
  uint64_t beginGroup(const std::vector<CollCall>& calls, bool device) {
    return capacity_ == 0 ? 0 : recordGroup(calls, device);
  }
  void endGroup(uint64_t first, size_t calls, CallState state, collResult_t result) {
    if (capacity_ != 0) closeGroup(first, calls, state, result);
  }

  // Oldest first; slots being written are left out.
  std::vector<CallRecord> snapshot() const;
  // The newest collective begun, and the newest that completed (0: none).
  uint64_t collectivesBegun() const { return collectivesBegun_.load(std::memory_order_relaxed); }
  uint64_t collectivesCompleted() const { return collectivesCompleted_.load(std::memory_order_relaxed); }

 private:
  struct Slot;
  uint64_t recordGroup(const std::vector<CollCall>& calls, bool device);
  uint64_t recordAt(const CollCall& call, bool device, int64_t nowNs);
  void closeGroup(uint64_t first, size_t calls, CallState state, collResult_t result);
  // endNs 0: a device call handed to its stream, whose end the host does not see.
  void closeAt(uint64_t ticket, CallState state, collResult_t result, Algo algorithm, int64_t endNs);
  bool readSlot(const Slot& slot, CallRecord* out) const;

  size_t capacity_;  // a power of two, or 0
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> written_{0};  // tickets handed out; the writer's to change
  uint64_t pointToPointCount_ = 0;
  std::atomic<uint64_t> collectivesBegun_{0};
  std::atomic<uint64_t> collectivesCompleted_{0};
};

}  // namespace trace
}  // namespace coll
