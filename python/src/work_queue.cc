#include "work_queue.h"

#include <ATen/core/grad_mode.h>
#include <Python.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "library_call.h"

namespace torch_collective {
namespace {

// Runs `body` where the call's torch operations belong: on its stream, for CUDA tensors.
void onCallStream(const QueuedCall& call, const std::function<void()>& body) {
  runWhereCallRuns(call.work->device(), body);
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

// A collective's batch holds that one call.
void runCollective(std::vector<QueuedCall>& batch) {
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
    // With the device of the group's CUDA tensors current, as a collective has (onCallStream): a
    // group may be a communicator's first call with a stream, whose setup resolves torch's default
    // stream through the current context, which the worker thread does not otherwise have.
    const auto onDevice =
        std::find_if(batch.begin(), batch.end(), [](const QueuedCall& call) { return call.work->device() != nullptr; });
    onCallStream(onDevice != batch.end() ? *onDevice : batch.front(), [&batch] {
      runAsGroup([&batch] {
        for (QueuedCall& call : batch) call.issue();
      });
    });
  } catch (...) {
    error = std::current_exception();
  }
  completeBatch(batch, error);
}

// Runs a batch that was taken off the queue: the worker's and a caller's way alike.
void runBatch(std::vector<QueuedCall>& batch, bool aborted) {
  // Results are copied into tensors that may require grad; these copies are not part of any graph.
  at::NoGradGuard noGrad;
  if (aborted) {
    completeBatch(batch, std::make_exception_ptr(std::runtime_error(
                             "collective backend: the process group was aborted; this call did not run")));
  } else if (batch.front().kind == CallKind::kCollective) {
    runCollective(batch);
  } else {
    runPointToPointGroup(batch);
  }
}

// A caller about to run calls on its own thread lets go of the GIL if it holds it (torch's
// bindings release it around backend calls, but not every caller is torch's): the calls wait for
// peers, and completing a Work may drop the last reference to a tensor, which takes the GIL.
class GilReleased {
 public:
  GilReleased() = default;
  ~GilReleased() {
    if (saved_ != nullptr) PyEval_RestoreThread(saved_);
  }
  GilReleased(const GilReleased&) = delete;
  GilReleased& operator=(const GilReleased&) = delete;
  // Idempotent.
  void release() {
    if (saved_ == nullptr && Py_IsInitialized() && PyGILState_Check()) saved_ = PyEval_SaveThread();
  }

 private:
  PyThreadState* saved_ = nullptr;
};

// The live queues, for shutdownAll. The registry is process-wide because interpreter exit is.
struct LiveQueues {
  std::mutex mutex;
  std::vector<std::weak_ptr<WorkQueue>> queues;
};

LiveQueues& liveQueues() {
  static LiveQueues live;
  return live;
}

std::atomic<uint64_t> batchesRunByCaller{0};
std::atomic<uint64_t> batchesRunByWorker{0};

}  // namespace

WorkQueue::RunCounts WorkQueue::runCounts() {
  RunCounts counts;
  counts.byCaller = batchesRunByCaller.load(std::memory_order_relaxed);
  counts.byWorker = batchesRunByWorker.load(std::memory_order_relaxed);
  return counts;
}

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
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopping_) {
    // No worker will take them: fail them now (outside the lock: completing a Work runs its
    // callbacks) rather than leave their waiters waiting.
    lock.unlock();
    completeBatch(calls, std::make_exception_ptr(std::runtime_error(
                             "collective backend: the process group was shut down; this call did not run")));
    return;
  }
  bool small = false, mustStart = false;
  ++callerActivity_;
  for (QueuedCall& call : calls) {
    uint64_t sequence = ++lastSequence_;
    call.work->setSequence(sequence);
    if (together) startedThrough_ = std::max(startedThrough_, sequence);
    if (call.forCaller && !together) {
      small = true;
    } else if (together || call.kind == CallKind::kCollective) {
      mustStart = true;
    }
    queue_.push_back({std::move(call), sequence});
  }
  // A call that must start at once takes every call before it along: they run first.
  if (mustStart) workerMayTakeThrough_ = lastSequence_;
  if (small && !ticking_) {
    // From its sleep to its ticks, once per burst; also while someone runs calls, or the worker
    // would sleep on and leave this call to a caller that may never wait for it.
    ticking_ = true;
    wakeWorker_.notify_one();
  }
  // Neither a small call (it waits for a tick) nor a held one makes the front takeable: while the
  // worker ticks or runs, posting them costs no wake-up (no futex), however many come. After an
  // abort the worker fails whatever comes.
  if (mustStart || aborted_) wakeWorkerIfReady();
}

void WorkQueue::startThrough(uint64_t sequence) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (sequence <= startedThrough_ && sequence <= workerMayTakeThrough_) return;
  startedThrough_ = std::max(startedThrough_, sequence);
  workerMayTakeThrough_ = std::max(workerMayTakeThrough_, sequence);
  wakeWorkerIfReady();
}

void WorkQueue::runThrough(uint64_t sequence) {
  GilReleased gil;  // taken back after the lock is let go: never wait for the GIL holding it
  std::unique_lock<std::mutex> lock(mutex_);
  startedThrough_ = std::max(startedThrough_, sequence);
  // Whatever this caller cannot run itself (a thread runs calls now) the worker takes at once.
  workerMayTakeThrough_ = std::max(workerMayTakeThrough_, sequence);
  // Calls on CUDA tensors stay with the worker, which makes their device current.
  while (!running_ && !aborted_ && !queue_.empty() && queue_.front().sequence <= sequence && frontIsReady() &&
         frontBatchOnHost()) {
    std::vector<QueuedCall> batch = takeBatch();
    running_ = true;
    ++callerActivity_;
    lock.unlock();
    gil.release();
    batchesRunByCaller.fetch_add(1, std::memory_order_relaxed);
    runTaken(batch, false);
    lock.lock();
  }
  wakeWorkerIfReady();
}

bool WorkQueue::claimForCaller(CollectiveWork& work) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (running_ || stopping_ || aborted_ || !queue_.empty()) return false;
  work.setSequence(++lastSequence_);
  running_ = true;
  ++callerActivity_;
  // The worker ticks while small calls come, run at once or posted alike (post() says why).
  // Left asleep here, it would also leave this process's core idle between calls, and on a
  // loaded (virtual) machine a rank woken from an idle core answers its peers late: such runs
  // stalled for milliseconds at a time (docs/pytorch.md, "Small calls").
  if (!ticking_) {
    ticking_ = true;
    wakeWorker_.notify_one();
  }
  return true;
}

void WorkQueue::endCallerRun() {
  std::lock_guard<std::mutex> lock(mutex_);
  running_ = false;
  wakeWorkerIfReady();
}

bool WorkQueue::runNow(QueuedCall& call) {
  // A host collective (forCaller): its issue and finish are all that runBatch would run of it.
  auto body = [&call] {
    call.issue();
    if (call.finish) call.finish();
  };
  return runNow(*call.work, CallBody(body));
}

bool WorkQueue::runNow(CollectiveWork& work, CallBody body) {
  GilReleased gil;  // taken back after the call, outside the lock
  if (!claimForCaller(work)) return false;
  gil.release();
  batchesRunByCaller.fetch_add(1, std::memory_order_relaxed);
  std::exception_ptr error;
  {
    // As runBatch: results are copied into tensors that may require grad, outside any graph.
    at::NoGradGuard noGrad;
    try {
      body();
    } catch (...) {
      error = std::current_exception();
    }
  }
  work.complete(error);
  endCallerRun();
  return true;
}

void WorkQueue::runTaken(std::vector<QueuedCall>& batch, bool aborted) {
  runBatch(batch, aborted);
  endCallerRun();
}

bool WorkQueue::workerMayTakeFront() const {
  if (queue_.empty() || !frontIsReady()) return false;
  return stopping_ || aborted_ || queue_.front().sequence <= workerMayTakeThrough_;
}

void WorkQueue::wakeWorkerIfReady() {
  if (running_) return;  // whoever runs will hand over when done
  if (queue_.empty() ? stopping_ : workerMayTakeFront()) wakeWorker_.notify_one();
}

void WorkQueue::waitForWork(std::unique_lock<std::mutex>& lock) {
  std::chrono::microseconds idleFor{0};
  bool callerBusy = false;  // during the last tick
  while (running_ || !(queue_.empty() ? stopping_ : workerMayTakeFront())) {
    if (!ticking_) {
      wakeWorker_.wait(lock);
      continue;
    }
    // A call posted during an idle tick is seen at its end and left to its caller for one more
    // (short) tick, as every call is. While the caller is busy with its calls the worker has
    // nothing to take, and a wake-up every short tick would only take turns with it on its core.
    const std::chrono::microseconds tick = queue_.empty() || callerBusy ? kIdleTick : kCallerTick;
    if (wakeWorker_.wait_for(lock, tick) != std::cv_status::timeout) continue;
    // A tick: what was queued at the last one has been left to its caller long enough, unless
    // the caller was busy with this queue's calls all the while (work_queue.h).
    callerBusy = callerActivity_ != callerActivityAtLastTick_;
    if (!callerBusy) workerMayTakeThrough_ = std::max(workerMayTakeThrough_, queuedAtLastTick_);
    callerActivityAtLastTick_ = callerActivity_;
    queuedAtLastTick_ = lastSequence_;
    idleFor = queue_.empty() ? idleFor + tick : std::chrono::microseconds{0};
    if (idleFor >= kIdleBeforeSleep) ticking_ = false;
  }
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
  // No thread takes a new batch to the library from here on. The one that may be running ends
  // with the library's error; collCommAbort waits for that call to let go before freeing.
  abortLibrary();
  std::lock_guard<std::mutex> lock(mutex_);
  wakeWorkerIfReady();
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

bool WorkQueue::frontBatchOnHost() const {
  // The calls takeBatch would take.
  const CallKind kind = queue_.front().call.kind;
  for (size_t i = 0; i < queue_.size(); ++i) {
    if (i > 0 && (kind == CallKind::kCollective || queue_[i].call.kind != kind)) break;
    if (queue_[i].call.work->device()) return false;
  }
  return true;
}

void WorkQueue::workerLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    waitForWork(lock);
    if (queue_.empty()) return;
    // Drains what is takeable one batch after the other, one pass through the lock per batch: no
    // wake-up and no second locking between the calls of an asynchronous burst.
    do {
      std::vector<QueuedCall> batch = takeBatch();
      const bool aborted = aborted_;
      running_ = true;
      lock.unlock();
      batchesRunByWorker.fetch_add(1, std::memory_order_relaxed);
      runBatch(batch, aborted);
      batch.clear();  // the calls' last references go outside the lock (they may take the GIL)
      lock.lock();
      running_ = false;
      // The worker runs calls because their callers did not (asynchronous calls): it takes what
      // they queued meanwhile without leaving it to them for another tick.
      workerMayTakeThrough_ = std::max(workerMayTakeThrough_, lastSequence_);
    } while (workerMayTakeFront());
  }
}

}  // namespace torch_collective
