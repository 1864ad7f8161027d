// The backend's own entries in torch's Flight Recorder (torch 2.15's c10d/FlightRecorder.hpp), the
// record a post-mortem reads to see which call each rank was in when a job hung. Torch attaches a
// generic hook to the groups of backends that do not record themselves; its pre-, post- and
// completion hooks cost more per call than a small call itself (docs/performance.md), so the
// package attaches this recorder in the hook's place (torch_collective/__init__.py): one entry per
// call made on the calling thread (the Python stack is gathered there), retired by the worker when
// the call completes. A failed call stays unretired and reads "scheduled", as under the hook.
// Shared by the backend and its Works, since a Work may outlive its group.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "torch_compat.h"

// Torch exports the recorder but not its template bodies (FlightRecorderDetail.hpp), which include
// nlohmann/json (Debian's nlohmann-json3-dev; tools/install-deps.sh): without it the extension
// leaves recording to torch's hook.
#if TORCH_COLLECTIVE_HAS_COMPLETION_HOOKS && __has_include(<nlohmann/json.hpp>)
#define TORCH_COLLECTIVE_RECORDS_FLIGHTS 1
#include <c10/core/Event.h>
#include <torch/csrc/distributed/c10d/FlightRecorder.hpp>
#include <torch/csrc/distributed/c10d/logger.hpp>
#else
#define TORCH_COLLECTIVE_RECORDS_FLIGHTS 0
#endif

namespace torch_collective {

// One call's place in the recorder: what retiring it takes. Empty when nothing was recorded.
struct FlightEntry {
  std::optional<size_t> id;
  std::optional<size_t> epoch;
  int64_t collectiveSequence = -1;  // -1: a point-to-point call, which the group's status skips
};

#if TORCH_COLLECTIVE_RECORDS_FLIGHTS
class FlightRecording {
 public:
  explicit FlightRecording(int timeoutMs) : timeoutMs_(timeoutMs) {}

  // From Python, once the group has its name and description, before its first call. Returns
  // false when torch's recorder is off (TORCH_FR_BUFFER_SIZE=0): then nothing is recorded.
  bool attach(const std::string& groupName, const std::string& groupDescription,
              const std::vector<uint64_t>& globalRanks, int globalRank);
  bool attached() const { return recorder_.load(std::memory_order_acquire) != nullptr; }

  // On the calling thread, before the call is queued. `peer` names the other rank of a send or
  // receive (-1: a collective); `collectiveSequence` is the group's count of collectives so far.
  FlightEntry record(c10d::OpType type, int rank, int peer, uint64_t collectiveSequence,
                     const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& outputs);
  // On the worker thread, once the call completed successfully.
  void retire(const FlightEntry& entry);

 private:
  std::atomic<c10d::FlightRecorder<c10::Event>*> recorder_{nullptr};  // published last by attach
  std::tuple<std::string, std::string> groupName_;
  size_t groupId_ = 0;
  std::shared_ptr<c10d::ProcessGroupStatus> status_ = std::make_shared<c10d::ProcessGroupStatus>();
  std::atomic<size_t> operations_{0};     // every call, the recorder's op_id
  std::atomic<size_t> pointToPoint_{0};   // sends and receives, its p2p_seq_id
  int timeoutMs_;
};
#else
// Torch lines before 2.15 have no recorder for other backends: nothing to record into.
class FlightRecording {
 public:
  explicit FlightRecording(int) {}
  bool attach(const std::string&, const std::string&, const std::vector<uint64_t>&, int) { return false; }
  bool attached() const { return false; }
  FlightEntry record(c10d::OpType, int, int, uint64_t, const std::vector<at::Tensor>&,
                     const std::vector<at::Tensor>&) {
    return {};
  }
  void retire(const FlightEntry&) {}
};
#endif

}  // namespace torch_collective
