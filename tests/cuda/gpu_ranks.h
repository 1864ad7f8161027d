// Runs a body on n ranks that share the GPU(s) of this machine, as threads of this process (one
// CUDA context: concurrent kernels) or as processes (kernels time-slice: serialized mode), each
// with its P2P domain connected to the others and a stream. Processes are this program started
// again (not forked: CUDA does not survive fork), told their rank through the environment, and
// rendezvous through a TCP store; threads share an in-memory store.
#pragma once

#include <cuda_runtime.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "collective.h"
#include "src/exec/device_engine.h"
#include "src/plan/device_program.h"
#include "transport/p2p/p2p_domain.h"

namespace colltest {

struct GpuRank {
  int rank;
  int nranks;
  int device;
  coll::DeviceMode mode;  // concurrent (threads) or serialized (processes on one GPU)
  coll::transport::P2pDomain* domain;
  coll::DeviceEngine* engine;
  coll::bootstrap::Store* store;
  cudaStream_t stream;
};

// Returns failure descriptions (empty when the rank passed).
using GpuRankBody = std::function<std::vector<std::string>(GpuRank& rank)>;

struct GpuJob {
  int nranks = 2;
  bool spreadOverGpus = false;  // rank r on GPU r % count (default: every rank on GPU 0)
  // Every wait of the transport and engine. A run in which no rank has reported progress
  // (reportProgress) for this plus 30 s is stopped (processes killed; threads: the program exits
  // 124 naming where each rank was); a long run that keeps reporting is not.
  int timeoutMs = defaultTimeoutMs();
  // COLL_TIMEOUT_MS when set, else 120 s.
  static int defaultTimeoutMs();
};

// Every rank of the job meets at `tag` in the store, within GpuJob::defaultTimeoutMs().
void meetRanks(GpuRank& rank, const std::string& tag);

// What this rank is doing now ("case 17: AllReduce float32 ..."), for the message of a run that
// times out; it also tells the run's watchdog that the ranks move (rank processes touch a
// heartbeat file). Cheap: call it per case.
void reportProgress(int rank, const std::string& what);
// When this process last reported progress (the epoch if never).
std::chrono::steady_clock::time_point lastReportedProgress();

// The file rank processes touch at every reportProgress: the launcher's sign that they move. It
// is made when constructed (ok() false when that failed) and removed when destroyed.
class HeartbeatFile {
 public:
  HeartbeatFile();
  ~HeartbeatFile();
  HeartbeatFile(const HeartbeatFile&) = delete;
  HeartbeatFile& operator=(const HeartbeatFile&) = delete;
  bool ok() const { return !path_.empty(); }
  // "VARIABLE=path", for a rank process's environment.
  std::string assignment() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Waits for every rank process. Once none has touched the heartbeat for `limitMs`, kills them all.
// Returns one failure per rank that hung, exited with a status other than 0, or died of a signal.
std::vector<std::string> awaitRankProcesses(const std::vector<pid_t>& pids, const HeartbeatFile& heartbeat,
                                            long limitMs);

std::vector<std::string> runGpuRanksAsThreads(const GpuJob& job, const GpuRankBody& body);
// bodyName must be registered in the map given to gpuRankChildMain by this program's main.
std::vector<std::string> runGpuRanksAsProcesses(const GpuJob& job, const std::string& bodyName);

// In main, first: when this process is a rank started by runGpuRanksAsProcesses, runs its body
// and returns the exit status (0 passed, 1 failed); otherwise returns -1.
int gpuRankChildMain(const std::map<std::string, GpuRankBody>& bodies);

// Whether a CUDA device is usable here; *why says why not. (Rank processes are started with exec,
// so they inherit no CUDA state from this one.)
bool gpuAvailable(std::string* why);
// Without a usable GPU: prints "SKIPPED: no CUDA device (why)" and returns true (exit with 77).
bool skipWithoutGpu();

// runGpuRanksAsThreads or runGpuRanksAsProcesses by mode ("threads" or "processes").
std::vector<std::string> runGpuRanks(const std::string& mode, const GpuJob& job, const std::string& bodyName,
                                     const GpuRankBody& body);

// COLL_GPU_TEST_ALGO (set by the programs' --algo, in COLL_ALGO's syntax) parsed, for the
// planning context of the GPU tests; nullptr when unset. "allreduce:cma" takes the direct
// all-reduce where the ranks are threads.
const coll::Algo* testAlgoOverrides();
// The planning context of `rank` with testAlgoOverrides() and the domain's shared address space.
coll::DeviceCallContext testCallContext(const GpuRank& rank);

// This rank's device program for a sum all-reduce of `count` elements of `type`, planned as the
// engine plans it (the build's geometry, no forced protocol, testCallContext).
coll::DeviceProgram planSumAllReduce(const GpuRank& rank, collDataType_t type, size_t elemSize, const void* sendbuff,
                                     void* recvbuff, size_t count);

// Starts this program again (/proc/self/exe) with `vars` ("NAME=value") added to this process's
// environment: how rank processes are made (CUDA does not survive fork). Returns the pid, or 0
// when posix_spawn failed.
pid_t spawnSelf(std::vector<std::string> vars);

// A unique id as hexadecimal text and back: how rank processes started with exec receive it.
std::string uniqueIdToHex(const collUniqueId& id);
collUniqueId uniqueIdFromHex(const std::string& hex);

// "a,b,c" -> {"a", "b", "c"} (command-line lists).
std::vector<std::string> splitCommaList(const std::string& text);
// "2,4,8" -> {2, 4, 8} (--ranks).
std::vector<int> splitRankCounts(const std::string& text);

// Enqueues the program on the rank's stream through its device engine.
void enqueueProgram(GpuRank& rank, const coll::DeviceProgram& program, collDataType_t type, collRedOp_t op,
                    const void* sendbuff, void* recvbuff);

}  // namespace colltest
