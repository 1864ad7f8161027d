// The Work object of one call on the collective backend: completed by the communicator's worker
// thread, waited on from Python, and carrying a Future (DDP's communication hooks chain on it).
// For a call on CUDA tensors the worker "completes" it once the library has enqueued it on the
// call's stream; the device's progress is then the call's event (device_call.h).
#pragma once

#include <ATen/core/ivalue.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "completion_hooks.h"
#include "device_call.h"
#include "flight_recording.h"
#include "torch_compat.h"

namespace torch_collective {

class WorkQueue;

class CollectiveWork : public c10d::Work {
 public:
  // `outputs` are what the call writes (and what the Future holds); the profiler records the
  // shapes of `inputs`, as it does Gloo's calls' (for in-place calls both are the same tensors);
  // `device` is null for a call on host tensors.
  CollectiveWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, const std::vector<at::Tensor>& inputs,
                 std::weak_ptr<WorkQueue> queue, std::shared_ptr<DeviceCall> device = nullptr);

  // On CUDA tensors: enqueued, and the device has passed the call's event.
  bool isCompleted() override;
  // Waits on the host until the call is enqueued (or done, on host tensors); then, on CUDA
  // tensors, synchronize().
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  // On CUDA tensors: the current stream waits for the call's event (no host block).
  void synchronize() override;
  // Made on first request (DDP's hooks, then()): most calls are only waited for, and a Future per
  // call is a share of a small call's cost. One asked for after completion comes completed.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;

  // Called once, by the worker thread: completes the Future, then the Work, so that a waiter who
  // wakes up finds the Future done as well. On CUDA tensors it runs with the call's stream
  // current (the Future records its own events there) and records the call's event first.
  void complete(std::exception_ptr error);
  const std::shared_ptr<DeviceCall>& device() const { return device_; }
  // The call's place in its queue, set when it is posted: a wait on this call starts held
  // point-to-point calls up to this one.
  void setSequence(uint64_t sequence) { sequence_.store(sequence); }
  // A receive from any source: the worker writes the rank it chose into `source`.
  void setSourceCell(std::shared_ptr<std::atomic<int>> source) { source_ = std::move(source); }
  int sourceRank() const override;
  // Told when this call completes successfully (torch 2.x's completion hooks: completion_hooks.h).
  void setCompletionHooks(std::shared_ptr<CompletionHooks> hooks) { completionHooks_ = std::move(hooks); }
  // This call's entry in torch's Flight Recorder, retired when it completes successfully.
  void setFlightEntry(std::shared_ptr<FlightRecording> recording, FlightEntry entry) {
    flightRecording_ = std::move(recording);
    flightEntry_ = entry;
  }

 private:
  // Someone is interested in this call's completion: point-to-point calls held back to be
  // batched (work_queue.h) must start now.
  void startHeldCalls();

  std::vector<at::Tensor> outputs_;
  // Guards future_ and the outcome a Future made after completion takes (Work's own mutex_ is
  // held by finish() while it runs, so it cannot guard the Future's completion too).
  std::mutex futureMutex_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  bool outcomeKnown_ = false;
  std::exception_ptr outcomeError_;
  std::weak_ptr<WorkQueue> queue_;
  std::shared_ptr<DeviceCall> device_;
  std::atomic<uint64_t> sequence_{0};         // 0: not posted yet
  std::shared_ptr<std::atomic<int>> source_;  // null: not a receive from any source
  std::shared_ptr<CompletionHooks> completionHooks_;
  std::shared_ptr<FlightRecording> flightRecording_;  // null: not recorded
  FlightEntry flightEntry_;
};

// The name torch.profiler (and the Flight Recorder) shows for a call of this type:
// "collective:all_reduce".
const char* profilingTitleOf(c10d::OpType type);

// A send or a receive (from a named or any source): a call between two ranks, not a collective.
inline bool isPointToPoint(c10d::OpType type) {
  return type == c10d::OpType::SEND || type == c10d::OpType::RECV || type == c10d::OpType::RECVANYSOURCE;
}

}  // namespace torch_collective
