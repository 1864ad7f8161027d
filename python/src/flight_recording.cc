#include "flight_recording.h"

#if TORCH_COLLECTIVE_RECORDS_FLIGHTS

// The recorder's template bodies: torch does not export them, so this library instantiates the
// ones it calls, which work on the one instance getFlightRecorder hands out.
#include <torch/csrc/distributed/c10d/FlightRecorderDetail.hpp>

#include "collective_work.h"

namespace torch_collective {
namespace {

// Torch's dump keys a group's status by this number: one per recorded group in the process.
std::atomic<size_t> groupsAttached{0};

// "collective:send 0->1", "collective:recv 1<-0", as NCCL names its point-to-point entries.
std::string entryNameOf(c10d::OpType type, int rank, int peer) {
  std::string name = profilingTitleOf(type);
  if (peer < 0) return name;
  name += ' ';
  name += std::to_string(rank);
  name += type == c10d::OpType::SEND ? "->" : "<-";
  name += std::to_string(peer);
  return name;
}

}  // namespace

bool FlightRecording::attach(const std::string& groupName, const std::string& groupDescription,
                             const std::vector<uint64_t>& globalRanks, int globalRank) {
  // The backend's own instance, as the hook would use: entries of one backend never push out
  // another's, and a dump asks for them by the name "collective".
  c10d::FlightRecorder<c10::Event>* recorder = c10d::getFlightRecorder("collective");
  if (recorder == nullptr || !recorder->enabled_) return false;
  groupName_ = std::make_tuple(groupName, groupDescription);
  groupId_ = groupsAttached.fetch_add(1);
  recorder->record_pg_ranks(groupName_, globalRanks);
  // Names this rank's dump file when a dump is asked for without a group at hand.
  recorder->setRank(globalRank);
  recorder_.store(recorder, std::memory_order_release);
  return true;
}

FlightEntry FlightRecording::record(c10d::OpType type, int rank, int peer, uint64_t collectiveSequence,
                                    const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs) {
  c10d::FlightRecorder<c10::Event>* recorder = recorder_.load(std::memory_order_acquire);
  if (recorder == nullptr) return {};
  const bool pointToPoint = isPointToPoint(type);
  const size_t p2pSequence = pointToPoint ? pointToPoint_.fetch_add(1) + 1 : pointToPoint_.load();
  FlightEntry entry;
  if (!pointToPoint) {
    entry.collectiveSequence = static_cast<int64_t>(collectiveSequence);
    status_->lastEnqueuedSeq = entry.collectiveSequence;
  }
  // A send only reads its tensor and a receive only writes it: each shows its tensor once.
  static const std::vector<at::Tensor> none;
  const bool send = type == c10d::OpType::SEND;
  auto trace = recorder->recordWithResetEnabled(
      groupId_, groupName_, collectiveSequence, p2pSequence, operations_.fetch_add(1),
      entryNameOf(type, rank, peer), pointToPoint && !send ? none : inputs,
      send ? none : outputs, nullptr, nullptr, std::chrono::milliseconds(timeoutMs_), status_, pointToPoint);
  entry.id = trace.id;
  entry.epoch = trace.reset_epoch;
  return entry;
}

void FlightRecording::retire(const FlightEntry& entry) {
  c10d::FlightRecorder<c10::Event>* recorder = recorder_.load(std::memory_order_acquire);
  if (recorder == nullptr || !entry.id) return;
  // The library does not time its calls: the entry carries no duration, rather than a host clock's
  // guess at one.
  recorder->retire_completed(entry.id, entry.epoch, std::nullopt);
  if (entry.collectiveSequence >= 0) status_->lastCompletedSeq = entry.collectiveSequence;
}

}  // namespace torch_collective

#endif
