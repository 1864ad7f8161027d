// The per-communicator worker thread: runs the calls of one process group in the order they were
// issued, so that every torch.distributed call returns at once with a Work, and completes each
// call's Work when its library calls are done.
//
// Small calls avoid the hand-over, which costs more than the library call itself (two thread
// wake-ups, against a fraction of a microsecond for an 8-byte all-reduce). One thread at a time
// runs this queue's calls (`running_`), the worker or a caller:
//   - a caller that waits (without a time limit) for a call that has not started runs it, and the
//     calls queued before it, itself, instead of waking the worker and sleeping until it is done;
//   - so that a synchronous call (issued, then waited for at once) finds it still queued, the
//     worker leaves a small call (QueuedCall::forCaller) to its caller for a moment: it takes one
//     only once it has been queued for a whole tick of kCallerTick, and a call that does not wait
//     (asynchronous) is then run by the worker, so it progresses without its caller as before.
//     A tick in which a caller posted or ran calls does not count: a caller that issues a batch
//     of asynchronous calls waits for them next, and would otherwise meet the worker on its core
//     running the batch's first calls, taking turns with it per call.
//     While small calls keep coming the worker ticks instead of sleeping, and nobody wakes it per
//     call: every kCallerTick while calls are queued and their caller is away, every kIdleTick
//     while none is queued or the caller was busy with them during the last tick (callers run
//     their calls as fast as they issue them, and a wake-up every kCallerTick on a core that a
//     rank needs made its peers wait for it: docs/performance.md). It sleeps again once the
//     queue has stayed empty for kIdleBeforeSleep. A batch of asynchronous calls is drained by
//     the worker, each call taken as the last one finishes.
// Calls that must start at once (large ones, batch_isend_irecv, held calls that someone waits on)
// wake the worker, and make the small calls queued before them its to take.
//
// Point-to-point calls are held back and run as one group (collGroupStart/End): torch programs
// commonly post isend and irecv to the same peer and only then wait, and the library runs host
// sends to completion, so a send started alone could wait forever for a receive that its peer
// has queued behind its own send. Held calls start when anyone waits on (or polls, or takes the
// Future of) one of them or a later call, when a collective is queued behind them, or at
// shutdown; a poll does not where torch's Flight Recorder hook polls every call as it is issued
// (collective_work.cc). Like MPI's, their progress thus needs a call: a start after a fixed delay instead
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

#include <chrono>

#include <c10/util/intrusive_ptr.h>

#include "collective_work.h"

namespace torch_collective {

enum class CallKind { kCollective, kPointToPoint };

// What a caller runs at once (WorkQueue::runNow): a reference to a callable on its stack, so that
// a call run where it is issued builds no closure on the heap.
class CallBody {
 public:
  template <typename Body>
  explicit CallBody(Body& body) : body_(&body), run_([](void* b) { (*static_cast<Body*>(b))(); }) {}
  void operator()() const { run_(body_); }

 private:
  void* body_;
  void (*run_)(void*);
};

struct QueuedCall {
  CallKind kind = CallKind::kCollective;
  // The library calls, on the worker thread. Point-to-point calls are issued inside their batch's
  // group, so their results arrive at collGroupEnd.
  std::function<void()> issue;
  // After success: copies results into the caller's tensors (non-contiguous ones, list forms).
  std::function<void()> finish;
  // Also says where the call runs: its device and stream, or null for host tensors.
  c10::intrusive_ptr<CollectiveWork> work;
  // The worker leaves the call to its caller for a tick: a small collective (the group's limit) on
  // host tensors, never a receive from any source or a call that is no torch collective.
  bool forCaller = false;
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
  // A host collective whose caller waits for it at once (torch 2.x says so: asyncOp false), its
  // library calls and copies back being `body`: when nothing is queued and no thread runs this
  // queue's calls, runs it on the calling thread now, in its place in the order, and returns true
  // with its Work complete. The caller's wait then finds it done: no posting, no worker tick, no
  // second pass through the lock. Otherwise returns false, and the caller posts the call.
  bool runNow(CollectiveWork& work, CallBody body);
  // The same for a call already made a QueuedCall (a small host collective: forCaller).
  bool runNow(QueuedCall& call);
  // Starts held point-to-point calls up to and including `sequence`.
  void startThrough(uint64_t sequence);
  // The caller is about to wait for call `sequence`: starts held calls through it and, unless a
  // thread already runs this queue's calls, runs on the calling thread every queued batch through
  // it that holds only host calls. Whatever is left goes to the worker.
  void runThrough(uint64_t sequence);
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

  // How many batches, process-wide so far, ran on the thread that waited for them and how many
  // the worker ran: tests tell whether the small-call path is taken without timing anything.
  struct RunCounts {
    uint64_t byCaller = 0;
    uint64_t byWorker = 0;
  };
  static RunCounts runCounts();

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
  // Whether every call of the batch takeBatch would take is on host tensors.
  bool frontBatchOnHost() const;
  // Runs a batch taken with running_ set, then clears it and hands what is left to the worker.
  // Called without the lock.
  void runTaken(std::vector<QueuedCall>& batch, bool aborted);
  // runNow's turn: with the lock, whether the caller may run `work` now (nothing queued, nobody
  // running), and if so numbers it and marks this queue's calls as running; then, after the call,
  // hands over to the worker whatever came meanwhile.
  bool claimForCaller(CollectiveWork& work);
  void endCallerRun();
  // With the lock held: whether the worker may take the front batch now (frontIsReady, and not a
  // small call still left to its caller), and waking it when it may.
  bool workerMayTakeFront() const;
  void wakeWorkerIfReady();
  // The worker's wait for something to do (the lock held): ticks while small calls come.
  void waitForWork(std::unique_lock<std::mutex>& lock);

  std::mutex mutex_;
  std::condition_variable wakeWorker_;
  std::deque<Entry> queue_;
  uint64_t lastSequence_ = 0;    // of the last call posted
  uint64_t startedThrough_ = 0;  // held calls with sequence <= this may start
  bool running_ = false;         // a thread (the worker or a caller) is running a batch
  // The worker may take calls with sequence <= this: those queued for a whole tick, or before a
  // call that must start at once.
  uint64_t workerMayTakeThrough_ = 0;
  uint64_t queuedAtLastTick_ = 0;  // lastSequence_ at the worker's last tick
  // Counts the callers' posts and runs: a tick in which it moved leaves the queued small calls to
  // the callers one tick more.
  uint64_t callerActivity_ = 0;
  uint64_t callerActivityAtLastTick_ = 0;
  bool ticking_ = false;           // the worker ticks (small calls come) instead of sleeping
  static constexpr std::chrono::microseconds kCallerTick{100};
  // So an asynchronous small call posted while the queue was empty starts within
  // kIdleTick + kCallerTick.
  static constexpr std::chrono::microseconds kIdleTick{1000};
  static constexpr std::chrono::microseconds kIdleBeforeSleep{10000};
  bool stopping_ = false;
  bool aborted_ = false;
  std::mutex joinMutex_;
  std::thread worker_;
};

}  // namespace torch_collective
