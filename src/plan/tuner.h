// Measured choice between two plans for large messages. On one host the best large-message
// algorithm depends on how the cores share caches, which can change while a job runs (a virtual
// machine's vCPUs move between chiplets): FIFO rings win by 2-3x when the cores share a cache,
// single-copy direct reads win by 2x when they do not (docs/performance.md). So rank 0 times its
// calls, keeps an estimate per algorithm and size class, mostly takes the faster one and now and
// then retries the other; a one-byte one-shot broadcast gives every rank rank 0's choice.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/params.h"

namespace coll {

class PlanTuner {
 public:
  // Picks between `usual` and `alternative` for a call of `bytes`.
  Algo choose(size_t bytes, Algo usual, Algo alternative);
  // Reports how long a call of `bytes` took with `algo`.
  void record(size_t bytes, Algo algo, double seconds);

 private:
  static constexpr int kSizeClasses = 48;  // log2 of the byte count
  static constexpr int kExploreEvery = 32;
  static constexpr double kMaxSlowdown = 64;  // retries at least every 32 x 3 x 64 calls
  // A plan is tried as a run of this many calls, and the first call of each run is not recorded:
  // it pays for how far the ranks drifted apart under the other plan (rank 0 may start a ring
  // while its peers still finish direct reads), so a single retry timed only the switch. With 4
  // ranks on 2 cores that made the ring look 2x slower than direct reads at 1 MiB all-reduce, when
  // back to back it is 2x faster (167 against 372 us, docs/performance.md).
  static constexpr int kRunCalls = 3;
  struct Estimate {
    double secondsPerByte = 0;  // 0: never measured
  };
  struct SizeClass {
    Algo algos[2] = {Algo::kAuto, Algo::kAuto};
    Estimate estimates[2];
    uint32_t sinceRetry = 0;  // calls since the slower one was last retried
    int runOf = -1;           // the plan of the current run of tries (index into algos), or -1
    int runLeft = 0;          // calls left in that run
    int lastReported = -1;    // the plan of the previous call reported, or -1: none yet
  };
  // Starts a run of kRunCalls calls of plan `index` and returns it.
  static Algo startRun(SizeClass& c, int index);
  static int sizeClassOf(size_t bytes);
  SizeClass classes_[kSizeClasses];
};

}  // namespace coll
