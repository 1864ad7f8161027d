// GPU correctness: every collective x type x op on 2, 4 and 8 ranks that share one GPU, as threads
// of this process (concurrent kernels) and as processes (serialized mode), through the P2P domain,
// the planner's device programs and the kernels. Prints "SKIPPED: no CUDA device (...)" and exits
// 77 where there is no GPU (ctest's SKIP_RETURN_CODE).
//
// usage: gpu_collectives [--ranks 2,4,8] [--modes threads,processes] [--thorough] [--spread]
//                        [--filter TEXT] [--algo COLL_ALGO]
// --filter keeps the cases whose description contains TEXT ("AllReduce float", "count 1 ").
// --algo plans with those algorithm overrides (COLL_ALGO's syntax): "allreduce:cma" runs every
// all-reduce with the direct kernel, where the ranks are threads or processes under MPS.
// COLL_TIMEOUT_MS bounds every wait (default 120 s); a run (one mode, one rank count) that is not
// done 30 s after it is stopped and named, with the case each rank was on.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/cuda/gpu_cases.h"
#include "tests/cuda/gpu_ranks.h"

namespace {

using colltest::GpuRank;

constexpr const char* kFilterVar = "COLL_GPU_TEST_FILTER";  // --filter, for the rank processes
bool gThorough = false;

std::string filterText() {
  const char* text = getenv(kFilterVar);
  return text ? text : "";
}

std::vector<std::string> runAllCases(GpuRank& rank) {
  std::vector<std::string> failures;
  const std::vector<colltest::GpuCase> cases = colltest::gpuCases(rank.nranks, gThorough, filterText());
  colltest::GpuArena arena(cases, rank.rank, rank.nranks);
  for (size_t i = 0; i < cases.size(); ++i) {
    const colltest::GpuCase& c = cases[i];
    colltest::reportProgress(rank.rank, "case " + std::to_string(i) + ": " + c.describe());
    std::string f = colltest::runGpuCase(rank, c, arena);
    if (!f.empty()) failures.push_back(c.describe() + ": " + f);
    // No rank reuses its buffers while a peer may still read them; and every rank stops once any
    // has had 10 failures (the others would wait for it in the next case): each adds its vote
    // before the barrier and reads the sum after it.
    const std::string tag = "gpu/case/" + std::to_string(i);
    rank.store->add(tag + "/stop", failures.size() >= 10 ? 1 : 0);
    colltest::meetRanks(rank, tag);
    if (rank.store->add(tag + "/stop", 0) > 0) {
      failures.push_back("(stopped: a rank had 10 failures)");
      break;
    }
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  gThorough = getenv("COLL_GPU_TEST_THOROUGH") != nullptr;
  const std::map<std::string, colltest::GpuRankBody> bodies = {{"cases", runAllCases}};
  if (int status = colltest::gpuRankChildMain(bodies); status >= 0) return status;

  std::vector<int> ranks = {2, 4, 8};
  std::vector<std::string> modes = {"threads", "processes"};
  bool spread = false;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--ranks") && i + 1 < argc) {
      ranks = colltest::splitRankCounts(argv[++i]);
    } else if (!strcmp(argv[i], "--modes") && i + 1 < argc) {
      modes = colltest::splitCommaList(argv[++i]);
    } else if (!strcmp(argv[i], "--thorough")) {
      gThorough = true;
      setenv("COLL_GPU_TEST_THOROUGH", "1", 1);  // for the rank processes
    } else if (!strcmp(argv[i], "--spread")) {
      spread = true;
    } else if (!strcmp(argv[i], "--filter") && i + 1 < argc) {
      setenv(kFilterVar, argv[++i], 1);  // read by every rank, threads and processes alike
    } else if (!strcmp(argv[i], "--algo") && i + 1 < argc) {
      setenv("COLL_GPU_TEST_ALGO", argv[++i], 1);  // likewise (gpu_ranks.h, testAlgoOverrides)
    } else {
      fprintf(stderr,
              "usage: %s [--ranks 2,4,8] [--modes threads,processes] [--thorough] [--spread] [--filter TEXT] [--algo "
              "COLL_ALGO]\n",
              argv[0]);
      return 2;
    }
  }
  if (colltest::skipWithoutGpu()) return 77;
  if (colltest::gpuCases(2, gThorough, filterText()).empty()) {
    fprintf(stderr, "gpu_collectives: no case matches --filter '%s'\n", filterText().c_str());
    return 2;
  }
  int failed = 0;
  for (const std::string& mode : modes)
    for (int n : ranks) {
      colltest::GpuJob job;
      job.nranks = n;
      job.spreadOverGpus = spread;
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::string> failures = colltest::runGpuRanks(mode, job, "cases", runAllCases);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const size_t ncases = colltest::gpuCases(n, gThorough, filterText()).size();
      printf("RESULT gpu_collectives %s n=%d: %zu cases, %s (%.1f s)\n", mode.c_str(), n, ncases,
             failures.empty() ? "PASS" : "FAIL", seconds);
      for (const std::string& f : failures) printf("  %s\n", f.c_str());
      fflush(stdout);
      failed += failures.empty() ? 0 : 1;
    }
  return failed == 0 ? 0 : 1;
}
