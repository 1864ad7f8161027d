#include "zero/step_threads.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "common/env_setting.h"

namespace coll {
namespace zero {
namespace {

constexpr int kMaxThreads = 256;

// OpenMP's variable: a list of per-level counts ("8" or "8,2"); the first is what a step at the
// outermost level gets. Anything OpenMP would refuse counts as unset.
int ompThreads() {
  const char* value = std::getenv("OMP_NUM_THREADS");
  if (value == nullptr) return 1;
  char* end = nullptr;
  const long threads = std::strtol(value, &end, 10);
  if (end == value || (*end != '\0' && *end != ',') || threads < 1) return 1;
  return static_cast<int>(std::min<long>(threads, kMaxThreads));
}

// The helper threads. Pieces are handed out under the mutex, each with the body of the call it
// belongs to, so a helper that wakes late finds nothing left to take rather than a piece of a
// later call to run with an earlier call's body; a call returns only once its pieces have.
class StepPool {
 public:
  // False when another thread's step holds the pool, or this process is a fork of the one that
  // made it (its helpers did not come along, and one may have held mutex_ at the fork): the
  // caller then runs every piece itself.
  // A piece each for the calling thread and pieces - 1 helpers.
  bool run(size_t pieces, const std::function<void(size_t)>& body) {
    if (getpid() != owner_) return false;
    std::unique_lock<std::mutex> call(callMutex_, std::try_to_lock);
    if (!call.owns_lock()) return false;
    std::unique_lock<std::mutex> lock(mutex_);
    try {
      while (threads_.size() + 1 < pieces) threads_.emplace_back([this] { help(); });
    } catch (const std::system_error&) {
      // No thread to be had (a process limit): the pieces go to the helpers there are, and this one.
    }
    body_ = &body;
    pieces_ = pieces;
    next_ = 0;
    finished_ = 0;
    wake_.notify_all();
    while (next_ < pieces_) runOne(lock);
    done_.wait(lock, [this] { return finished_ == pieces_; });
    body_ = nullptr;
    return true;
  }

 private:
  // Takes the next piece and runs it outside the lock; the lock is held again on return.
  void runOne(std::unique_lock<std::mutex>& lock) {
    const size_t piece = next_++;
    const std::function<void(size_t)>* body = body_;
    lock.unlock();
    (*body)(piece);
    lock.lock();
    if (++finished_ == pieces_) done_.notify_all();
  }

  void help() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return next_ < pieces_; });
      runOne(lock);
    }
  }

  const pid_t owner_ = getpid();
  std::mutex callMutex_;  // one step at a time
  std::mutex mutex_;      // what follows
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(size_t)>* body_ = nullptr;
  size_t pieces_ = 0;
  size_t next_ = 0;
  size_t finished_ = 0;
  std::vector<std::thread> threads_;
};

// Made at first use and never destroyed: its helpers wait on it until the process exits, and a
// destructor run at exit would have to stop threads that may be in a step of another thread.
StepPool& stepPool() {
  static StepPool* pool = new StepPool();
  return *pool;
}

}  // namespace

int readStepThreads() {
  if (envIsSet("COLL_ZERO_THREADS")) return static_cast<int>(envInteger("COLL_ZERO_THREADS", 1, kMaxThreads, 1));
  return ompThreads();
}

int stepThreadsFromEnvironment() {
  // No lock (a fork could copy it held): two threads that read at once read the same.
  static std::atomic<int> threads{0};  // 0: not read yet, or refused
  int count = threads.load(std::memory_order_relaxed);
  if (count == 0) {
    count = readStepThreads();
    threads.store(count, std::memory_order_relaxed);
  }
  return count;
}

void forEachPiece(size_t count, int threads, size_t alignment, const std::function<void(size_t, size_t)>& piece) {
  alignment = std::max<size_t>(alignment, 1);
  const size_t most = std::max<size_t>(count / kElementsPerThread, 1);
  const size_t pieces = std::min(most, static_cast<size_t>(std::max(threads, 1)));
  // Piece i covers [bound(i), bound(i + 1)): equal shares rounded down to the alignment.
  const size_t share = (count / pieces) / alignment * alignment;
  auto bound = [&](size_t i) { return i == pieces ? count : i * share; };
  auto body = [&](size_t i) { piece(bound(i), bound(i + 1)); };
  if (pieces == 1 || share == 0) {
    piece(0, count);
    return;
  }
  const std::function<void(size_t)> runPiece = body;
  if (stepPool().run(pieces, runPiece)) return;
  for (size_t i = 0; i < pieces; ++i) body(i);
}

}  // namespace zero
}  // namespace coll
