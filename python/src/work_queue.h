// The per-communicator worker thread: runs the calls of one process group in the order they were
// issued, so that every torch.distributed call returns at once with a Work, and completes each
// call's Work when its library calls are done.
//
// Point-to-point calls are held back and run as one group (collGroupStart/End): torch programs
// commonly post isend and irecv to the same peer and only then wait, and the library runs host
// sends to completion, so a send started alone could wait forever for a receive that its peer
// has queued behind its own send. Held calls start when anyone waits on (or polls, or takes the
// Future of) one of them or a later call, when a collective is queued behind them, or at
// shutdown. Like MPI's, their progress thus needs a call: a start after a fixed delay instead
// would split batches whenever the scheduler delays the caller, and splitting is what deadlocks.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <c10/util/intrusive_ptr.h>

#include "collective_work.h"

namespace torch_collective {

enum class CallKind { kCollective, kPointToPoint };

struct QueuedCall {
  CallKind kind = CallKind::kCollective;
  // The library calls, on the worker thread. Point-to-point calls are issued inside their batch's
  // group, so their results arrive at collGroupEnd.
  std::function<void()> issue;
  // After success: copies results into the caller's tensors (non-contiguous ones, list forms).
  std::function<void()> finish;
  // Also says where the call runs: its device and stream, or null for host tensors.
  c10::intrusive_ptr<CollectiveWork> work;
};

class WorkQueue {
 public:
  // Queues are shared (Works keep weak references) and registered for shutdownAll.
  static std::shared_ptr<WorkQueue> create();
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Posts calls in order, numbering their Works. `together` calls (batch_isend_irecv) start at
  // once, as one group as far as they are point-to-point.
  void post(std::vector<QueuedCall> calls, bool together);
  // Starts held point-to-point calls up to and including `sequence`.
  void startThrough(uint64_t sequence);
  // Runs everything still queued, then stops the worker. Idempotent; calls posted afterwards fail
  // at once.
  void shutdown();
  // Shuts down every live queue of the process. Registered with Python's atexit: a worker still
  // running when the interpreter finalizes would take the GIL from a finalizing interpreter,
  // which ends the thread with a forced unwind that C++ turns into std::terminate.
  static void shutdownAll();
  // Fails every queued and later call without running it, and runs `abortLibrary` (which ends
  // the library call in flight, if any). Idempotent.
  void abort(const std::function<void()>& abortLibrary);

 private:
  struct Entry {
    QueuedCall call;
    uint64_t sequence;
  };

  WorkQueue();
  void workerLoop();
  bool frontIsReady() const;
  // One collective, or every point-to-point call up to the next collective.
  std::vector<QueuedCall> takeBatch();

  std::mutex mutex_;
  std::condition_variable wakeWorker_;
  std::deque<Entry> queue_;
  uint64_t lastSequence_ = 0;    // of the last call posted
  uint64_t startedThrough_ = 0;  // held calls with sequence <= this may start
  bool stopping_ = false;
  bool aborted_ = false;
  std::mutex joinMutex_;
  std::thread worker_;
};

}  // namespace torch_collective
