#include "work_queue.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <stdexcept>

#include "library_call.h"

namespace torch_collective {
namespace {

// Runs `body` where the call's torch operations belong: on its stream, for CUDA tensors.
void onCallStream(const QueuedCall& call, const std::function<void()>& body) {
  if (const std::shared_ptr<DeviceCall>& device = call.work->device()) {
    device->runOnStream(body);
  } else {
    body();
  }
}

// Finishes each call of a batch that ran (or failed) together and completes its Work.
void completeBatch(std::vector<QueuedCall>& batch, std::exception_ptr error) {
  for (QueuedCall& call : batch) {
    std::exception_ptr callError = error;
    auto finishAndComplete = [&] {
      if (!callError && call.finish) {
        try {
          call.finish();
        } catch (...) {
          callError = std::current_exception();
        }
      }
      call.work->complete(callError);
    };
    try {
      onCallStream(call, finishAndComplete);
    } catch (...) {
      // Making the stream current failed, before anything ran.
      call.work->complete(std::current_exception());
    }
  }
}

void runCollective(QueuedCall& call) {
  std::vector<QueuedCall> batch{std::move(call)};
  std::exception_ptr error;
  try {
    onCallStream(batch[0], batch[0].issue);
  } catch (...) {
    error = std::current_exception();
  }
  completeBatch(batch, error);
}

void runPointToPointGroup(std::vector<QueuedCall>& batch) {
  std::exception_ptr error;
  try {
    runAsGroup([&batch] {
      for (QueuedCall& call : batch) call.issue();
    });
  } catch (...) {
    error = std::current_exception();
  }
  completeBatch(batch, error);
}

// The live queues, for shutdownAll. The registry is process-wide because interpreter exit is.
struct LiveQueues {
  std::mutex mutex;
  std::vector<std::weak_ptr<WorkQueue>> queues;
};

LiveQueues& liveQueues() {
  static LiveQueues live;
  return live;
}

}  // namespace

std::shared_ptr<WorkQueue> WorkQueue::create() {
  std::shared_ptr<WorkQueue> queue(new WorkQueue());
  LiveQueues& live = liveQueues();
  std::lock_guard<std::mutex> lock(live.mutex);
  live.queues.erase(std::remove_if(live.queues.begin(), live.queues.end(),
                                   [](const std::weak_ptr<WorkQueue>& q) { return q.expired(); }),
                    live.queues.end());
  live.queues.push_back(queue);
  return queue;
}

WorkQueue::WorkQueue() : worker_([this] { workerLoop(); }) {}

WorkQueue::~WorkQueue() { shutdown(); }

void WorkQueue::shutdownAll() {
  std::vector<std::shared_ptr<WorkQueue>> queues;
  {
    LiveQueues& live = liveQueues();
    std::lock_guard<std::mutex> lock(live.mutex);
    for (const std::weak_ptr<WorkQueue>& weak : live.queues)
      if (std::shared_ptr<WorkQueue> queue = weak.lock()) queues.push_back(std::move(queue));
  }
  // Outside the registry's lock: a call finishing meanwhile may create or destroy a group.
  for (const std::shared_ptr<WorkQueue>& queue : queues) queue->shutdown();
}

void WorkQueue::post(std::vector<QueuedCall> calls, bool together) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (stopping_) {
      // No worker will take them: fail them now (outside the lock: completing a Work runs its
      // callbacks) rather than leave their waiters waiting.
      lock.unlock();
      completeBatch(calls, std::make_exception_ptr(std::runtime_error(
                               "collective backend: the process group was shut down; this call did not run")));
      return;
    }
    for (QueuedCall& call : calls) {
      uint64_t sequence = ++lastSequence_;
      call.work->setSequence(sequence);
      if (together) startedThrough_ = std::max(startedThrough_, sequence);
      queue_.push_back({std::move(call), sequence});
    }
  }
  wakeWorker_.notify_one();
}

void WorkQueue::startThrough(uint64_t sequence) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (sequence <= startedThrough_) return;
    startedThrough_ = sequence;
  }
  wakeWorker_.notify_one();
}

void WorkQueue::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wakeWorker_.notify_one();
  // Two threads may shut down at once (the group's owner and shutdownAll at exit): the second
  // waits here until the first has joined, so that no one destroys a thread still running.
  std::lock_guard<std::mutex> joining(joinMutex_);
  if (worker_.joinable()) worker_.join();
}

void WorkQueue::abort(const std::function<void()>& abortLibrary) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) return;
    aborted_ = true;
  }
  // The worker takes no new batch to the library from here on. The one it may be running ends
  // with the library's error; collCommAbort waits for that call to let go before freeing.
  abortLibrary();
  wakeWorker_.notify_one();
}

bool WorkQueue::frontIsReady() const {
  const Entry& front = queue_.front();
  if (front.call.kind == CallKind::kCollective || stopping_ || aborted_ || front.sequence <= startedThrough_)
    return true;
  return std::any_of(queue_.begin(), queue_.end(), [](const Entry& e) { return e.call.kind == CallKind::kCollective; });
}

std::vector<QueuedCall> WorkQueue::takeBatch() {
  std::vector<QueuedCall> batch;
  CallKind kind = queue_.front().call.kind;
  do {
    batch.push_back(std::move(queue_.front().call));
    queue_.pop_front();
  } while (kind == CallKind::kPointToPoint && !queue_.empty() && queue_.front().call.kind == kind);
  return batch;
}

void WorkQueue::workerLoop() {
  // Results are copied into tensors that may require grad; these copies are not part of any graph.
  at::NoGradGuard noGrad;
  for (;;) {
    std::vector<QueuedCall> batch;
    bool aborted = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wakeWorker_.wait(lock, [this] { return queue_.empty() ? stopping_ : frontIsReady(); });
      if (queue_.empty()) return;
      batch = takeBatch();
      aborted = aborted_;
    }
    if (aborted) {
      completeBatch(batch, std::make_exception_ptr(std::runtime_error(
                               "collective backend: the process group was aborted; this call did not run")));
    } else if (batch.front().kind == CallKind::kCollective) {
      runCollective(batch.front());
    } else {
      runPointToPointGroup(batch);
    }
  }
}

}  // namespace torch_collective
