// Starting the ranks: their environment, their CPU binding, and fork/exec.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "options.h"

namespace collrun {

// Binds port 0 on all interfaces and returns the port the kernel chose (0 on failure, with errno set).
int pickFreePort();

// PROGRAM as execvp would find it; "" (and a message in *why) when it cannot be executed.
std::string resolveProgram(const std::string& program, std::string* why);

struct RankSpec {
  int rank = 0;
  int localRank = 0;
  std::vector<std::string> env;  // complete environment, "NAME=value"
  bool hasCpuSet = false;
  cpu_set_t cpus;
  int stdoutFd = -1;  // write ends of the output pipes (-1: inherit)
  int stderrFd = -1;
  bool stdinDevNull = false;
};

// OpenMP threads for each of `localRanks` ranks on this node, unless the user set
// OMP_NUM_THREADS: collrun's CPUs shared out, at least 1; 0 (leave it alone) for a single rank.
// Without it every rank of a torch job starts a thread per CPU, which measured much slower where
// ranks outnumber cores (docs/performance.md, "Choices in the code, and the measurement behind
// each").
int threadsPerRank(int localRanks);

// The environment of collrun plus the rank's variables (which replace inherited ones), and
// OMP_NUM_THREADS (threadsPerRank) where the user's environment has none.
std::vector<std::string> rankEnvironment(const Options& opts, int localRank, const std::string& secret);

// Forks and execs the rank. The child gets its own process group, default signal handling, an
// empty signal mask and a parent-death signal; returns the pid, or -1 with errno set.
pid_t spawnRank(const RankSpec& spec, const std::string& program, const std::vector<std::string>& args);

}  // namespace collrun
