#include "collective_work.h"

#include <ATen/core/jit_type.h>

#include "work_queue.h"

namespace torch_collective {

namespace {

// A Future on a device records events on its streams when it completes and makes its users'
// streams wait for them, as NCCL's does.
std::vector<c10::Device> devicesOf(const std::shared_ptr<DeviceCall>& device) {
  if (!device) return {};
  return {device->device()};
}

}  // namespace

CollectiveWork::CollectiveWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                               std::weak_ptr<WorkQueue> queue, std::shared_ptr<DeviceCall> device)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                       devicesOf(device))),
      queue_(std::move(queue)),
      device_(std::move(device)) {}

void CollectiveWork::startHeldCalls() {
  if (std::shared_ptr<WorkQueue> queue = queue_.lock()) queue->startThrough(sequence_.load());
}

bool CollectiveWork::isCompleted() {
  startHeldCalls();
  if (!c10d::Work::isCompleted()) return false;
  return !device_ || exception() != nullptr || device_->deviceDone();
}

bool CollectiveWork::wait(std::chrono::milliseconds timeout) {
  startHeldCalls();
  // Calls synchronize() once the call is enqueued and did not fail.
  return c10d::Work::wait(timeout);
}

void CollectiveWork::synchronize() {
  c10d::Work::synchronize();
  if (device_) device_->makeCurrentStreamWait();
}

c10::intrusive_ptr<c10::ivalue::Future> CollectiveWork::getFuture() {
  startHeldCalls();
  return future_;
}

std::vector<at::Tensor> CollectiveWork::result() { return outputs_; }

void CollectiveWork::complete(std::exception_ptr error) {
  if (!error && device_) {
    try {
      device_->recordCompletion();
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
  finish(error);
}

}  // namespace torch_collective
