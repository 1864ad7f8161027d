// A job of ranks as processes, launched as collrun launches them: each gets RANK, WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT and calls collCommInitFromEnv, so rank 0's process hosts the
// rendezvous store (the case where a shrink must survive the store's host). The test can kill or
// stop a rank from outside, start a process later (a replacement for collCommGrow), read each
// rank's stderr, and share a few numbers between the ranks through shared memory.
//
// Children set their environment before the library reads it (once per process): keep the
// parent free of communicators, so that each child's first read is its own.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "collective.h"

namespace colltest {

// Numbers the ranks share (steady_clock nanoseconds, flags): one page, zeroed at the start.
struct SharedBoard {
  std::atomic<int64_t> slot[64];
};

// A rank's work: failures it found (empty: passed).
using JobBody = std::function<std::vector<std::string>(collComm_t comm, int rank, int nranks, SharedBoard& board)>;
// A process started later, with no communicator of its own yet.
using ExtraBody = std::function<std::vector<std::string>(SharedBoard& board)>;

class RankJob {
 public:
  // Starts the ranks. `env` is set in every child before init (KEY=VALUE); `config` (may be
  // null) is passed to collCommInitFromEnv. With `bodyInits`, the body gets a NULL comm and calls
  // collCommInitFromEnv itself (to look at the process before and after).
  RankJob(int nranks, const JobBody& body, const std::vector<std::string>& env = {},
          const collConfig_t* config = nullptr, bool bodyInits = false);
  ~RankJob();

  pid_t pid(int rank) const { return pids_[rank]; }
  SharedBoard& board() { return *board_; }
  // A directory of this job's own (logs, dumps), removed with the job.
  const std::string& dir() const { return dir_; }
  // Starts one more process running `body` (its stderr goes to extra<k>.log); returns its index.
  int spawn(const ExtraBody& body, const std::vector<std::string>& env = {});
  // Waits for every process until `seconds` pass (then kills what runs); returns every failure.
  // Ranks in `mayDie` may end by a signal without it being a failure.
  std::vector<std::string> wait(int seconds, const std::set<int>& mayDie = {});
  // A rank's stderr so far.
  std::string output(int rank) const;

 private:
  struct Child {
    pid_t pid = -1;
    int reportFd = -1;
    std::string report;
    std::string name;
  };
  pid_t startChild(const std::string& logName, const std::vector<std::string>& env,
                   const std::function<std::vector<std::string>()>& run, int* reportFd);

  int nranks_;
  std::string dir_;
  SharedBoard* board_ = nullptr;
  std::vector<pid_t> pids_;
  std::vector<Child> children_;  // the ranks, then the extras
};

// The body's failure line: "rank R: what".
std::string failure(int rank, const std::string& what);
// A job of `nranks` with `timeoutMs` on every communicator (and `extra` started beside it), to
// its end: every failure.
std::vector<std::string> runJob(int nranks, const JobBody& body, int timeoutMs, const std::set<int>& mayDie = {},
                                const ExtraBody& extra = nullptr);
// steady_clock in nanoseconds: the same clock in every process of the machine.
int64_t nowNs();
// Whether this thread's last error about `comm` holds `text`.
bool lastErrorMentions(collComm_t comm, const char* text);

}  // namespace colltest
