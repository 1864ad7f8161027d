// collrun's command line: what to start, how many, and how to wire the ranks together.
#pragma once

#include <string>
#include <vector>

namespace collrun {

// kAuto: cores (each rank its share) when this node's ranks fit its cores (Open MPI binds by
// default too), else none.
enum class Binding { kAuto, kNone, kCore, kCores, kNuma };

struct Options {
  int nprocs = 0;    // -n: processes on this node
  int nnodes = 1;    // --nnodes
  int nodeRank = 0;  // --node-rank
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;  // 0: pick a free one (single node only)
  Binding bind = Binding::kAuto;
  bool tagOutput = false;
  double timeoutSec = 0;             // 0: none
  double graceSec = 3;               // --grace: the others' time to end by themselves after a failure
  bool keepGoing = false;            // --keep-going: a failed rank does not stop the others
  std::string secretFile;            // --secret-file: COLL_STORE_SECRET from its first line
  std::vector<std::string> command;  // PROGRAM ARGS...
};

enum class ParseOutcome { kRun, kExitSuccess, kUsageError };

// Parses argv into *opts. On kExitSuccess (--help, --version) the text has been printed; on
// kUsageError the error and the usage have been printed to stderr and the caller exits 2.
ParseOutcome parseOptions(int argc, char** argv, Options* opts);

}  // namespace collrun
