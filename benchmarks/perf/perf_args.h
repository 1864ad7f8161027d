// Command-line flags of the perf programs: nccl-tests' names, meanings and defaults.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "perf_counts.h"
#include "perf_types.h"

namespace collperf {

enum class MemoryKind { kAuto, kHost, kDevice };

struct PerfArgs {
  size_t minBytes = 32u << 20;
  size_t maxBytes = 32u << 20;
  size_t stepFactor = 1;         // > 1: multiply the size by this
  size_t stepBytes = 1u << 20;   // otherwise: add this
  std::vector<size_t> sizeList;  // --sizes: these sizes instead of -b/-e's sequence
  // -n and -w: one count for every size, or a comma-separated count per size (compare.py sizes
  // each cell's calls to a time budget and runs all of a collective's sizes in one launch, as it
  // does Open MPI's, so that neither library's large sizes run in a fresh process).
  std::vector<int> iters = {20};
  std::vector<int> warmups = {5};
  bool check = true;
  bool blocking = true;
  MemoryKind memory = MemoryKind::kAuto;  // -m; kAuto: GPU memory where the rank has a GPU
  int root = 0;
  CountPattern counts = CountPattern::kLinear;  // --counts, for the variable-count programs
  std::vector<const TypeInfo*> types;
  std::vector<const OpInfo*> ops;
  std::string commandLine;
};

enum class ArgsOutcome { kRun, kExitSuccess, kUsageError };

// The sizes a run measures, in order: --sizes, or -b to -e by -f or -i.
std::vector<size_t> sizesToRun(const PerfArgs& args);

// -n or -w's count for the size at `index` of sizesToRun().
int countFor(const std::vector<int>& counts, size_t index);

// Parses argv; prints help or errors itself (errors only on rank 0 of the launch environment).
ArgsOutcome parsePerfArgs(int argc, char** argv, const char* program, bool hasOp, PerfArgs* args);

// Under a launcher every rank parses the same flags: only one of them (rank 0) reports problems.
bool isReportingRank();

// This process's rank as the launcher gave it (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID),
// "0" when run alone; for messages printed before the communicator exists.
const char* launcherRank();

// "8", "64K", "1M", "2G" (powers of 1024) -> bytes; false when malformed.
bool parseBytes(const char* text, size_t* bytes);

}  // namespace collperf
