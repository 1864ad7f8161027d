#include "collective_work.h"

#include <ATen/core/jit_type.h>

#include "work_queue.h"

namespace torch_collective {

CollectiveWork::CollectiveWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs,
                               std::weak_ptr<WorkQueue> queue)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))),
      queue_(std::move(queue)) {}

void CollectiveWork::startHeldCalls() {
  if (std::shared_ptr<WorkQueue> queue = queue_.lock()) queue->startThrough(sequence_.load());
}

bool CollectiveWork::isCompleted() {
  startHeldCalls();
  return c10d::Work::isCompleted();
}

bool CollectiveWork::wait(std::chrono::milliseconds timeout) {
  startHeldCalls();
  return c10d::Work::wait(timeout);
}

c10::intrusive_ptr<c10::ivalue::Future> CollectiveWork::getFuture() {
  startHeldCalls();
  return future_;
}

std::vector<at::Tensor> CollectiveWork::result() { return outputs_; }

void CollectiveWork::complete(std::exception_ptr error) {
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
  finish(error);
}

}  // namespace torch_collective
