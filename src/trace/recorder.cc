#include "src/trace/recorder.h"

#include <time.h>

#include "src/collective_table.h"

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

// The collective's row names it, so a new collective is recorded, dumped and read back by name.
const char* operationName(CollType type) { return collTraceName(type); }

// Odd version: being written. A reader copies the fields between two reads of an even, unchanged
// version. `shape` packs the call's type, op, datatype, whether it is a device call, and its root
// or peer; `outcome` its state, algorithm and result: two stores where six fields would be six.
// A line each: a slot that straddled two lines made each record write both.
struct alignas(64) FlightRecorder::Slot {
  std::atomic<uint32_t> version{0};
  std::atomic<uint64_t> seq{0};
  std::atomic<uint64_t> count{0};
  std::atomic<int64_t> startNs{0};
  std::atomic<int64_t> endNs{0};
  std::atomic<uint64_t> shape{0};
  std::atomic<uint64_t> outcome{0};
};

namespace {

bool isPointToPoint(CollType type) { return type == CollType::kSend || type == CollType::kRecv; }

size_t powerOfTwoAtLeast(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return n == 0 ? 0 : p;
}

uint64_t shapeOf(const CollCall& call, bool device) {
  const int32_t other = isPointToPoint(call.type) ? call.peer : call.type == CollType::kAllReduce ? -1 : call.root;
  return static_cast<uint64_t>(call.type) | static_cast<uint64_t>(static_cast<uint8_t>(call.op)) << 8 |
         static_cast<uint64_t>(static_cast<uint8_t>(call.datatype)) << 16 | static_cast<uint64_t>(device) << 24 |
         static_cast<uint64_t>(static_cast<uint32_t>(other)) << 32;
}

uint64_t outcomeOf(CallState state, Algo algorithm, collResult_t result) {
  return static_cast<uint64_t>(state) | static_cast<uint64_t>(algorithm) << 8 |
         static_cast<uint64_t>(static_cast<uint32_t>(result)) << 16;
}

void unpack(uint64_t shape, uint64_t outcome, CallRecord* r) {
  r->type = static_cast<CollType>(shape & 0xff);
  r->op = static_cast<collRedOp_t>((shape >> 8) & 0xff);
  r->datatype = static_cast<collDataType_t>((shape >> 16) & 0xff);
  r->device = ((shape >> 24) & 1) != 0;
  const int32_t other = static_cast<int32_t>(static_cast<uint32_t>(shape >> 32));
  r->root = isPointToPoint(r->type) ? -1 : other;
  r->peer = isPointToPoint(r->type) ? other : -1;
  r->state = static_cast<CallState>(outcome & 0xff);
  const Algo algorithm = static_cast<Algo>((outcome >> 8) & 0xff);
  r->algorithm = algorithm == Algo::kAuto ? "" : algoName(algorithm);
  r->result = static_cast<collResult_t>(static_cast<int32_t>(static_cast<uint32_t>(outcome >> 16)));
}

}  // namespace

FlightRecorder::FlightRecorder(size_t capacity)
    : capacity_(powerOfTwoAtLeast(capacity)), slots_(capacity_ > 0 ? std::make_unique<Slot[]>(capacity_) : nullptr) {}

FlightRecorder::~FlightRecorder() = default;

uint64_t FlightRecorder::recordGroup(const std::vector<CollCall>& calls, bool device) {
  const int64_t now = coarseMonotonicNs();
  const uint64_t first = written_.load(kRelaxed);
  for (const CollCall& call : calls) recordAt(call, device, now);
  return first;
}

uint64_t FlightRecorder::recordAt(const CollCall& call, bool device, int64_t nowNs) {
  uint64_t seq;
  if (isPointToPoint(call.type)) {
    seq = ++pointToPointCount_;
  } else {
    seq = collectivesBegun_.load(kRelaxed) + 1;
    collectivesBegun_.store(seq, kRelaxed);
  }
  const uint64_t ticket = written_.load(kRelaxed);
  Slot& s = slots_[ticket & (capacity_ - 1)];
  const uint32_t v = s.version.load(kRelaxed);
  s.version.store(v + 1, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.seq.store(seq, kRelaxed);
  s.count.store(call.count, kRelaxed);
  s.startNs.store(nowNs, kRelaxed);
  s.endNs.store(0, kRelaxed);
  s.shape.store(shapeOf(call, device), kRelaxed);
  s.outcome.store(outcomeOf(CallState::kStarted, Algo::kAuto, collSuccess), kRelaxed);
  s.version.store(v + 2, std::memory_order_release);
  written_.store(ticket + 1, std::memory_order_release);
  return ticket;
}

void FlightRecorder::closeGroup(uint64_t first, size_t calls, CallState state, collResult_t result) {
  const int64_t now = state != CallState::kQueued ? coarseMonotonicNs() : 0;
  for (size_t i = 0; i < calls; ++i) closeAt(first + i, state, result, Algo::kAuto, now);
}

void FlightRecorder::closeAt(uint64_t ticket, CallState state, collResult_t result, Algo algorithm, int64_t endNs) {
  Slot& s = slots_[ticket & (capacity_ - 1)];
  const uint32_t v = s.version.load(kRelaxed);
  s.version.store(v + 1, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.outcome.store(outcomeOf(state, algorithm, result), kRelaxed);
  if (endNs != 0) s.endNs.store(endNs, kRelaxed);
  if (state == CallState::kCompleted && !isPointToPoint(static_cast<CollType>(s.shape.load(kRelaxed) & 0xff)))
    collectivesCompleted_.store(s.seq.load(kRelaxed), kRelaxed);
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
    const uint64_t shape = s.shape.load(kRelaxed);
    const uint64_t outcome = s.outcome.load(kRelaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.version.load(kRelaxed) != before) continue;
    unpack(shape, outcome, out);
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
    if (readSlot(slots_[t & (capacity_ - 1)], &record)) records.push_back(std::move(record));
  }
  return records;
}

}  // namespace trace
}  // namespace coll
