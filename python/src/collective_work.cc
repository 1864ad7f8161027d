#include "collective_work.h"

#include <ATen/core/jit_type.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include "work_queue.h"

namespace torch_collective {

namespace {

// A Future on a device records events on its streams when it completes and makes its users'
// streams wait for them, as NCCL's does.
std::vector<c10::Device> devicesOf(const std::shared_ptr<DeviceCall>& device) {
  if (!device) return {};
  return {device->device()};
}

// Torch's Work opens its profiler event only where a profiler listens; without one, making the
// event's RecordFunction and copying the inputs for it is all the title costs.
const char* titleIfProfiled(c10d::OpType type) { return at::hasCallbacks() ? profilingTitleOf(type) : nullptr; }

}  // namespace

// The name torch.profiler shows for a call: "backend:operation", with Gloo's operation names (its
// coalesced all-reduce and all-gather are "all_reduce" and "all_gather", all_to_all_single is
// "all_to_all"), so that a trace, and torch's own tests of one, read the same whichever backend
// made it. torch keeps the pointer: literals.
const char* profilingTitleOf(c10d::OpType type) {
  switch (type) {
    case c10d::OpType::BROADCAST:
      return "collective:broadcast";
    case c10d::OpType::ALLREDUCE:
      return "collective:all_reduce";
    case c10d::OpType::ALLREDUCE_COALESCED:
      return "collective:all_reduce";
    case c10d::OpType::REDUCE:
      return "collective:reduce";
    case c10d::OpType::ALLGATHER:
      return "collective:all_gather";
    case c10d::OpType::_ALLGATHER_BASE:
      return "collective:_all_gather_base";
    case c10d::OpType::ALLGATHER_COALESCED:
      return "collective:all_gather";
    case c10d::OpType::GATHER:
      return "collective:gather";
    case c10d::OpType::SCATTER:
      return "collective:scatter";
    case c10d::OpType::REDUCE_SCATTER:
      return "collective:reduce_scatter";
    case c10d::OpType::_REDUCE_SCATTER_BASE:
      return "collective:_reduce_scatter_base";
    case c10d::OpType::ALLTOALL_BASE:
      return "collective:all_to_all";
    case c10d::OpType::ALLTOALL:
      return "collective:all_to_all";
    case c10d::OpType::SEND:
      return "collective:send";
    case c10d::OpType::RECV:
      return "collective:recv";
    case c10d::OpType::RECVANYSOURCE:
      return "collective:recvAnySource";
    case c10d::OpType::BARRIER:
      return "collective:barrier";
    default:  // the coalesced blocks of torch 2.x, split, the ZeRO library calls
      return "collective:call";
  }
}

CollectiveWork::CollectiveWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                               const std::vector<at::Tensor>& inputs, std::weak_ptr<WorkQueue> queue,
                               std::shared_ptr<DeviceCall> device)
    // Torch's Work opens a profiler event (RECORD_FUNCTION's mechanism, with the inputs' shapes)
    // when it is made and closes it in finish(), where the call completes: the event spans the
    // call from issue to completion, as Gloo's do.
    : c10d::Work(rank, type, titleIfProfiled(type), inputs),
      outputs_(std::move(outputs)),
      queue_(std::move(queue)),
      device_(std::move(device)) {}

void CollectiveWork::startHeldCalls() {
  if (std::shared_ptr<WorkQueue> queue = queue_.lock()) queue->startThrough(sequence_.load());
}

bool CollectiveWork::isCompleted() {
  // Polling starts held point-to-point calls, which wait for someone's interest. A collective
  // starts on its own (a small one once its caller has had a tick to wait for it: work_queue.h).
  // Torch 2.x's Flight Recorder hook, once attached (completion_hooks.h), polls every call as it is
  // issued: that poll must neither hand a small collective to the worker just before its caller
  // waits, nor start an isend before the irecv queued after it (against a peer doing the same,
  // both sends then wait for good). With the hook, held calls start at wait() and the other
  // occasions work_queue.h names, not at a poll.
  if (isPointToPoint(retrieveOpType()) && !(completionHooks_ && completionHooks_->any())) startHeldCalls();
  if (!c10d::Work::isCompleted()) return false;
  return !device_ || exception() != nullptr || device_->deviceDone();
}

bool CollectiveWork::wait(std::chrono::milliseconds timeout) {
  // Without a time limit the caller may run the call itself (work_queue.h); one it could not give
  // up on after `timeout` goes to the worker.
  if (timeout == kNoTimeout) {
    // A call that ran when it was issued (WorkQueue::runNow) leaves nothing to run.
    if (!c10d::Work::isCompleted()) {
      if (std::shared_ptr<WorkQueue> queue = queue_.lock()) queue->runThrough(sequence_.load());
    }
  } else {
    startHeldCalls();
  }
  // Calls synchronize() once the call is enqueued and did not fail.
  return c10d::Work::wait(timeout);
}

void CollectiveWork::synchronize() {
  c10d::Work::synchronize();
  if (device_) device_->makeCurrentStreamWait();
}

c10::intrusive_ptr<c10::ivalue::Future> CollectiveWork::getFuture() {
  startHeldCalls();
  std::lock_guard<std::mutex> lock(futureMutex_);
  if (future_) return future_;
  future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors(), devicesOf(device_));
  if (outcomeKnown_) {
    // Completed already: on CUDA tensors, with the call's stream current, where its event was
    // recorded, so that the Future's own events follow the call.
    auto completeFuture = [&] {
      if (outcomeError_) {
        future_->setError(outcomeError_);
      } else {
        future_->markCompleted(c10::IValue(outputs_));
      }
    };
    runWhereCallRuns(device_, completeFuture);
  }
  return future_;
}

std::vector<at::Tensor> CollectiveWork::result() { return outputs_; }

int CollectiveWork::sourceRank() const {
  TORCH_CHECK(source_, "collective backend: sourceRank() is known only for a recv from any source");
  const int source = source_->load();
  TORCH_CHECK(source >= 0, "collective backend: sourceRank(): the recv from any source has not found its source yet",
              " (wait for it first)");
  return source;
}

void CollectiveWork::complete(std::exception_ptr error) {
  if (!error && device_) {
    try {
      device_->recordCompletion();
    } catch (...) {
      error = std::current_exception();
    }
  }
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard<std::mutex> lock(futureMutex_);
    outcomeKnown_ = true;
    outcomeError_ = error;
    future = future_;
  }
  if (future) {
    if (error) {
      future->setError(error);
    } else {
      future->markCompleted(c10::IValue(outputs_));
    }
  }
  finish(error);
  if (!error && flightRecording_) flightRecording_->retire(flightEntry_);
#if TORCH_COLLECTIVE_HAS_COMPLETION_HOOKS
  // After the Work reads completed: a hook that missed its key at issue time looks it up then.
  if (!error && completionHooks_) completionHooks_->completed(getCompletionKey());
#endif
}

}  // namespace torch_collective
