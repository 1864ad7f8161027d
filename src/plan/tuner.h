// Measured choice between two plans for large messages. On one host the best large-message
// algorithm depends on how the cores share caches, which can change while a job runs (a virtual
// machine's vCPUs move between chiplets): FIFO rings win when the cores share a cache, single-copy
// direct reads when they do not (docs/performance.md, "Cross-core variability"). So rank 0 times
// its calls, keeps an estimate per algorithm and size class, mostly takes the faster one and now
// and then retries the other; a small one-shot broadcast gives every rank rank 0's choice, once per
// lease of calls (SharedChoices). A rank also uses a tuner of its own, with no lease, for its large
// point-to-point sends, where each rank chooses for itself (host_engine.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "src/algorithms/native.h"
#include "src/coll_call.h"
#include "src/params.h"

namespace coll {

class PlanTuner {
 public:
  // Picks between `usual` and `alternative` for a call of `bytes`.
  //
  // With `leaseCalls`, the choice is held for a lease: *leaseCalls calls of this size class from
  // this one (set on the call that starts a lease, 0 on the calls within one), so that rank 0
  // tells the other ranks its choice once per lease, not once per call. Why: that one-byte
  // broadcast is a meeting of all ranks, which costs most where ranks share cores (measured
  // slower on every call: docs/performance.md, "What we tried and why it lost", "The plan tuner").
  // The others count the lease's calls down themselves (SharedChoices).
  Algo choose(size_t bytes, Algo usual, Algo alternative, uint32_t* leaseCalls = nullptr);
  // Reports how long a call of `bytes` took with `algo`.
  void record(size_t bytes, Algo algo, double seconds);

  static constexpr int kSizeClasses = 48;      // log2 of the byte count
  static constexpr uint32_t kLeaseCalls = 64;  // the longest lease: a change of plan waits at most this
  static int sizeClassOf(size_t bytes);

 private:
  static constexpr int kExploreEvery = 32;
  static constexpr double kMaxSlowdown = 64;  // retries at least every 32 x 6 x 64 calls
  // A plan is tried as a run of this many calls, and the first call of each run is not recorded:
  // it pays for how far the ranks drifted apart under the other plan (rank 0 may start a ring
  // while its peers still finish direct reads), so a single retry timed only the switch. With 4
  // ranks on 2 cores that made the ring look slower than direct reads at 1 MiB all-reduce, when
  // back to back it is the faster (docs/performance.md, "What we tried and why it lost", "The plan
  // tuner").
  //
  // Runs are longer than that one call, and a plan's estimate is the median of its latest
  // samples: with ranks sharing cores a call now and then takes several times its usual time (a
  // rank preempted), and a running average of single calls followed those spikes. With 4 ranks
  // on 2 cores at 1 MiB all-to-all, direct reads were the faster, yet a spike while they were
  // tried kept pairwise exchange for most calls of some runs (docs/performance.md, same section).
  static constexpr int kRunCalls = 6;
  static_assert(kRunCalls <= static_cast<int>(kLeaseCalls), "a run of tries is one lease");
  static constexpr int kWindow = 15;  // the samples a plan's estimate is the median of (odd)
  // A plan's first run in a size class is timed on its last calls only: its first calls also pay
  // for memory touched for the first time (pages of the output, the FIFO's slots) and come in
  // falling, and their median decided the first choice, which then holds for a lease and the
  // next retry is 192 calls on. At 2 ranks, 4 MiB all-to-all, that median took the slower plan for
  // nearly every call (docs/performance.md, "What we tried and why it lost", "The plan tuner").
  static constexpr int kFirstRunUntimedCalls = 3;
  static_assert(kFirstRunUntimedCalls < kRunCalls, "a first run times some calls");
  struct Estimate {
    double samples[kWindow] = {};  // seconds per byte, the newest at (next - 1) % kWindow
    int count = 0;                 // samples held, at most kWindow
    int next = 0;
    void add(double secondsPerByte);
    double median() const;  // 0: no sample
  };
  struct SizeClass {
    Algo algos[2] = {Algo::kAuto, Algo::kAuto};
    Estimate estimates[2];
    uint32_t sinceRetry = 0;  // calls since the slower one was last retried
    int heldIndex = -1;       // the plan of the current run of tries or lease (index into algos)
    uint32_t heldLeft = 0;    // calls left in that run or lease
    int lastReported = -1;    // the plan of the previous call reported, or -1: none yet
    int taken = -1;           // the plan preferred at the last choice, or -1: none yet
    // The plan just left is retried after kExploreEvery runs' worth of calls, whatever it seemed
    // to cost: it was left for its latest samples, which may be a burst of slow calls, and an
    // interval scaled by that burst kept the slower plan for thousands of calls.
    bool retryLeftSoon = false;
    bool triedBefore[2] = {false, false};  // whether a run of the plan was begun: its first is timed less
    int untimedLeft = 0;                   // calls of the current run not to record
  };
  // Starts a run of kRunCalls calls of plan `index` and returns it.
  static Algo startRun(SizeClass& c, int index, uint32_t* leaseCalls);
  // Holds plan `index` for `calls` calls from this one (a run, or a lease) and returns it.
  static Algo hold(SizeClass& c, int index, uint32_t calls, uint32_t* leaseCalls);
  SizeClass classes_[kSizeClasses];
};

// One call's share of a lease (SharedChoices::choose): the plan it runs and, on rank 0, the timing
// that reports it to the tuner when the call ends, unless the call threw (a failed call says
// nothing of the plan's speed). Whoever runs the call only keeps it alive while it runs.
class LeasedCall {
 public:
  LeasedCall() = default;
  LeasedCall(LeasedCall&& other) noexcept { swap(other); }
  LeasedCall& operator=(LeasedCall&& other) noexcept {
    swap(other);
    return *this;
  }
  ~LeasedCall() {
    if (timing_ != nullptr) report();
  }
  Algo algo() const { return algo_; }

 private:
  friend class SharedChoices;
  // Rank 0's timing of the call in flight (one at a time: a rank runs its calls in turn).
  struct Timing {
    PlanTuner* tuner = nullptr;
    size_t bytes = 0;
    Algo algo = Algo::kAuto;
    int64_t startNs = 0;
    int uncaughtAtStart = 0;  // exceptions in flight when the call began: more at its end means it threw
  };
  void swap(LeasedCall& other) noexcept {
    std::swap(timing_, other.timing_);
    std::swap(algo_, other.algo_);
  }
  void report();

  Timing* timing_ = nullptr;  // rank 0's, while it times this call
  Algo algo_ = Algo::kAuto;
};

// Rank 0's measured choices between a collective's two plans, shared with every rank: per
// collective, rank 0's tuner; on every rank, the lease of calls the last choice it heard of holds
// for, per collective and size class. While calls are left, no rank asks rank 0.
class SharedChoices {
 public:
  explicit SharedChoices(int rank) : rank_(rank) {}
  // The plan `call` runs, `usual` or `alternative`, the same on every rank: where this rank's
  // lease has no calls left, every rank hears rank 0's choice, and how many calls it holds for,
  // through `agreement` (a one-shot runner) broadcasting it, waiting with `waiter`. Throws
  // collRemoteError on a choice rank 0 cannot have sent.
  LeasedCall choose(const CollCall& call, Algo usual, Algo alternative, NativeRunner& agreement, PeerWaiter& waiter);

 private:
  struct Lease {
    uint32_t callsLeft = 0;
    uint8_t choice = 0;  // 0: the usual plan, 1: its alternative
  };
  int rank_;
  PlanTuner tuners_[static_cast<int>(CollType::kCount)];  // rank 0's
  Lease leases_[static_cast<int>(CollType::kCount)][PlanTuner::kSizeClasses];
  LeasedCall::Timing timing_;  // rank 0's call in flight
};

}  // namespace coll
