#include "src/trace/recorder.h"

#include <time.h>

namespace coll {
namespace trace {

namespace {

constexpr std::memory_order kRelaxed = std::memory_order_relaxed;

}  // namespace

int64_t coarseMonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

const char* callStateName(CallState state) {
  switch (state) {
    case CallState::kQueued:
      return "queued";
    case CallState::kStarted:
      return "started";
    case CallState::kCompleted:
      return "completed";
    case CallState::kFailed:
      return "failed";
  }
  return "unknown";
}

const char* operationName(CollType type) {
  switch (type) {
    case CollType::kAllReduce:
      return "all_reduce";
    case CollType::kBroadcast:
      return "broadcast";
    case CollType::kReduce:
      return "reduce";
    case CollType::kAllGather:
      return "all_gather";
    case CollType::kReduceScatter:
      return "reduce_scatter";
    case CollType::kGather:
      return "gather";
    case CollType::kScatter:
      return "scatter";
    case CollType::kAllToAll:
      return "all_to_all";
    case CollType::kBarrier:
      return "barrier";
    case CollType::kSend:
      return "send";
    case CollType::kRecv:
      return "recv";
    default:
      return "unknown";
  }
}

// Odd version: being written. A reader copies the fields between two reads of an even, unchanged
// version.
struct FlightRecorder::Slot {
  std::atomic<uint32_t> version{0};
  std::atomic<uint64_t> seq{0};
  std::atomic<uint64_t> count{0};
  std::atomic<int64_t> startNs{0};
  std::atomic<int64_t> endNs{0};
  std::atomic<const char*> algorithm{""};
  std::atomic<int32_t> root{-1};
  std::atomic<int32_t> peer{-1};
  std::atomic<int32_t> datatype{0};
  std::atomic<uint8_t> type{0};
  std::atomic<uint8_t> op{0};
  std::atomic<uint8_t> state{0};
  std::atomic<uint8_t> device{0};
  std::atomic<int32_t> result{0};
};

FlightRecorder::FlightRecorder(size_t capacity)
    : capacity_(capacity), slots_(capacity > 0 ? std::make_unique<Slot[]>(capacity) : nullptr) {}

FlightRecorder::~FlightRecorder() = default;

uint64_t FlightRecorder::begin(const CollCall& call, bool device) {
  if (capacity_ == 0) return 0;
  const bool pointToPoint = call.type == CollType::kSend || call.type == CollType::kRecv;
  const uint64_t seq = pointToPoint ? ++pointToPointCount_ : collectivesBegun_.load(kRelaxed) + 1;
  if (!pointToPoint) collectivesBegun_.store(seq, kRelaxed);
  const uint64_t ticket = nextTicket_++;
  Slot& s = slots_[ticket % capacity_];
  const uint32_t v = s.version.load(kRelaxed);
  s.version.store(v + 1, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.seq.store(seq, kRelaxed);
  s.count.store(call.count, kRelaxed);
  s.startNs.store(coarseMonotonicNs(), kRelaxed);
  s.endNs.store(0, kRelaxed);
  s.algorithm.store("", kRelaxed);
  s.root.store(pointToPoint || call.type == CollType::kAllReduce ? -1 : call.root, kRelaxed);
  s.peer.store(pointToPoint ? call.peer : -1, kRelaxed);
  s.datatype.store(static_cast<int32_t>(call.datatype), kRelaxed);
  s.type.store(static_cast<uint8_t>(call.type), kRelaxed);
  s.op.store(static_cast<uint8_t>(call.op), kRelaxed);
  s.state.store(static_cast<uint8_t>(CallState::kStarted), kRelaxed);
  s.device.store(device ? 1 : 0, kRelaxed);
  s.result.store(collSuccess, kRelaxed);
  s.version.store(v + 2, std::memory_order_release);
  written_.store(nextTicket_, std::memory_order_release);
  return ticket;
}

void FlightRecorder::end(uint64_t ticket, CallState state, collResult_t result, const char* algorithm) {
  if (capacity_ == 0) return;
  Slot& s = slots_[ticket % capacity_];
  const uint32_t v = s.version.load(kRelaxed);
  s.version.store(v + 1, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.state.store(static_cast<uint8_t>(state), kRelaxed);
  s.result.store(static_cast<int32_t>(result), kRelaxed);
  s.algorithm.store(algorithm != nullptr ? algorithm : "", kRelaxed);
  if (state != CallState::kQueued) s.endNs.store(coarseMonotonicNs(), kRelaxed);
  const uint8_t type = s.type.load(kRelaxed);
  const bool pointToPoint =
      type == static_cast<uint8_t>(CollType::kSend) || type == static_cast<uint8_t>(CollType::kRecv);
  if (state == CallState::kCompleted && !pointToPoint) collectivesCompleted_.store(s.seq.load(kRelaxed), kRelaxed);
  s.version.store(v + 2, std::memory_order_release);
}

bool FlightRecorder::readSlot(const Slot& s, CallRecord* out) const {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint32_t before = s.version.load(std::memory_order_acquire);
    if (before & 1u) continue;
    out->seq = s.seq.load(kRelaxed);
    out->count = s.count.load(kRelaxed);
    out->startNs = s.startNs.load(kRelaxed);
    out->endNs = s.endNs.load(kRelaxed);
    const char* algorithm = s.algorithm.load(kRelaxed);
    out->root = s.root.load(kRelaxed);
    out->peer = s.peer.load(kRelaxed);
    out->datatype = static_cast<collDataType_t>(s.datatype.load(kRelaxed));
    out->type = static_cast<CollType>(s.type.load(kRelaxed));
    out->op = static_cast<collRedOp_t>(s.op.load(kRelaxed));
    out->state = static_cast<CallState>(s.state.load(kRelaxed));
    out->device = s.device.load(kRelaxed) != 0;
    out->result = static_cast<collResult_t>(s.result.load(kRelaxed));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.version.load(kRelaxed) != before) continue;
    out->algorithm = algorithm;
    return true;
  }
  return false;
}

std::vector<CallRecord> FlightRecorder::snapshot() const {
  std::vector<CallRecord> records;
  if (capacity_ == 0) return records;
  const uint64_t written = written_.load(std::memory_order_acquire);
  const uint64_t first = written > capacity_ ? written - capacity_ : 0;
  records.reserve(written - first);
  for (uint64_t t = first; t < written; ++t) {
    CallRecord record;
    if (readSlot(slots_[t % capacity_], &record)) records.push_back(std::move(record));
  }
  return records;
}

}  // namespace trace
}  // namespace coll
