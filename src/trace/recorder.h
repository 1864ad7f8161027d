// The flight recorder: each communicator keeps its last N calls (sequence number, operation, type,
// count, root or peer, algorithm, state and times) in a ring, so that a hang or a failure can say
// which call every rank was in (hang_diagnosis.h) and a dead job's dumps can say it afterwards
// (trace_dump.h, colltrace).
//
// The thread that makes the calls writes; the communicator's watcher thread (answering a peer's
// probe), a dump on SIGUSR1 and an abort from another thread read. Each slot sits under a version
// word, as a seqlock: the writer never waits, and a reader skips a slot it caught mid-write. The
// fields are relaxed atomics, which cost a plain store on x86, so the record of a call is a few
// stores and one coarse clock read at its start and at its end.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collective.h"
#include "src/coll_call.h"

namespace coll {
namespace trace {

// kQueued: a device call enqueued on its stream (the host does not see it end); kStarted: running
// on the host now; kCompleted and kFailed: returned.
enum class CallState : uint8_t { kQueued, kStarted, kCompleted, kFailed };
const char* callStateName(CallState state);
// "all_reduce", "broadcast", ... (torch's spelling, which the hang line and the dumps use).
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

class FlightRecorder {
 public:
  // capacity 0: records nothing (COLL_TRACE_BUFFER=0).
  explicit FlightRecorder(size_t capacity);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  bool enabled() const { return capacity_ > 0; }
  size_t capacity() const { return capacity_; }
  // Records a call as it starts (device calls: as they are enqueued); returns the ticket for end().
  uint64_t begin(const CollCall& call, bool device);
  // The call's end: kCompleted, kFailed, or kQueued for a device call handed to its stream.
  // `algorithm` is a static name ("" when unknown).
  void end(uint64_t ticket, CallState state, collResult_t result, const char* algorithm);

  // Oldest first; slots being written are left out.
  std::vector<CallRecord> snapshot() const;
  // The newest collective begun, and the newest that completed (0: none).
  uint64_t collectivesBegun() const { return collectivesBegun_.load(std::memory_order_relaxed); }
  uint64_t collectivesCompleted() const { return collectivesCompleted_.load(std::memory_order_relaxed); }

 private:
  struct Slot;
  bool readSlot(const Slot& slot, CallRecord* out) const;

  size_t capacity_;
  std::unique_ptr<Slot[]> slots_;
  uint64_t nextTicket_ = 0;  // the writer's alone
  std::atomic<uint64_t> written_{0};
  uint64_t pointToPointCount_ = 0;
  std::atomic<uint64_t> collectivesBegun_{0};
  std::atomic<uint64_t> collectivesCompleted_{0};
};

// CLOCK_MONOTONIC_COARSE in nanoseconds: the recorder's clock, cheap enough for every call; its
// resolution (a few milliseconds) is what a hang's report needs.
int64_t coarseMonotonicNs();

}  // namespace trace
}  // namespace coll
