#include "tests/cuda/api_ranks.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "tests/cuda/gpu_ranks.h"

namespace colltest {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kRankVar = "COLL_API_TEST_RANK";
constexpr const char* kSizeVar = "COLL_API_TEST_NRANKS";
constexpr const char* kIdVar = "COLL_API_TEST_ID";
constexpr const char* kBodyVar = "COLL_API_TEST_BODY";
constexpr const char* kTimeoutVar = "COLL_API_TEST_TIMEOUT_MS";
constexpr int kGraceMs = 60000;

// One rank: device, stream, communicator, the body, teardown.
std::vector<std::string> runRank(int rank, int nranks, const collUniqueId& id, int timeoutMs, const ApiRankBody& body) {
  const std::string me = "rank " + std::to_string(rank) + ": ";
  ApiRank r;
  r.rank = rank;
  r.nranks = nranks;
  if (cudaSetDevice(0) != cudaSuccess || cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking) != cudaSuccess)
    return {me + "cudaSetDevice(0) or cudaStreamCreate failed"};
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = timeoutMs;
  const collResult_t rc = collCommInitRankConfig(&r.comm, nranks, id, rank, &config);
  if (rc != collSuccess) return {me + apiFailure("init", rc, nullptr)};
  std::vector<std::string> failures = body(r);
  for (std::string& f : failures) f = me + f;
  // After a failure the peers may be gone: abort instead of a destroy that meets them.
  collResult_t destroyed = failures.empty() ? collCommDestroy(r.comm) : collCommAbort(r.comm);
  if (destroyed != collSuccess && failures.empty()) failures.push_back(me + apiFailure("destroy", destroyed, nullptr));
  cudaStreamDestroy(r.stream);
  return failures;
}

std::vector<std::string> runThreads(const ApiJob& job, const collUniqueId& id, const ApiRankBody& body) {
  std::vector<std::vector<std::string>> failures(job.nranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < job.nranks; ++r)
    threads.emplace_back([&, r] { failures[r] = runRank(r, job.nranks, id, job.timeoutMs, body); });
  for (auto& t : threads) t.join();
  std::vector<std::string> all;
  for (auto& f : failures) all.insert(all.end(), f.begin(), f.end());
  return all;
}

std::vector<std::string> runProcesses(const ApiJob& job, const collUniqueId& id, const std::string& bodyName) {
  // The ranks touch it as they report progress: the sign that a long job still moves.
  const HeartbeatFile heartbeat;
  if (!heartbeat.ok()) return {"mkstemp for the heartbeat file failed"};
  std::vector<pid_t> pids;
  std::vector<std::string> failures;
  const int perHost = (job.nranks + job.hosts - 1) / job.hosts;
  for (int r = 0; r < job.nranks; ++r) {
    std::vector<std::string> vars = {std::string(kRankVar) + "=" + std::to_string(r),
                                     std::string(kSizeVar) + "=" + std::to_string(job.nranks),
                                     std::string(kIdVar) + "=" + uniqueIdToHex(id),
                                     std::string(kBodyVar) + "=" + bodyName,
                                     std::string(kTimeoutVar) + "=" + std::to_string(job.timeoutMs),
                                     heartbeat.assignment()};
    if (job.hosts > 1) vars.push_back("COLL_HOSTID=gpu-staged-host" + std::to_string(r / perHost));
    const pid_t pid = spawnSelf(vars);
    if (pid == 0) {
      failures.push_back("posix_spawn of rank " + std::to_string(r) + " failed");
      break;
    }
    pids.push_back(pid);
  }
  // Stopped once no rank has reported progress for longer than the ranks' own watchdogs allow.
  for (std::string& f : awaitRankProcesses(pids, heartbeat, job.timeoutMs + kGraceMs + 10000))
    failures.push_back(std::move(f));
  return failures;
}

}  // namespace

std::string apiFailure(const char* what, collResult_t rc, collComm_t comm) {
  if (rc == collSuccess) return "";
  return std::string(what) + ": " + collGetErrorString(rc) + ": " + collGetLastError(comm);
}

int apiRankChildMain(const std::map<std::string, ApiRankBody>& bodies) {
  const char* rank = getenv(kRankVar);
  if (rank == nullptr) return -1;
  const auto body = bodies.find(getenv(kBodyVar) != nullptr ? getenv(kBodyVar) : "");
  if (body == bodies.end()) return 2;
  const int timeoutMs = atoi(getenv(kTimeoutVar));
  // A rank that stops moving despite every bound says so rather than be killed silently; one that
  // keeps reporting progress (reportProgress, per case) may run as long as it needs.
  std::thread([rank, timeoutMs] {
    const Clock::time_point start = Clock::now();
    const auto limit = std::chrono::milliseconds(timeoutMs + kGraceMs);
    for (;;) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      if (Clock::now() - std::max(start, lastReportedProgress()) > limit) break;
    }
    printf("TIMEOUT rank %s: no progress for %d ms\n", rank, timeoutMs + kGraceMs);
    fflush(stdout);
    _exit(124);
  }).detach();
  const std::vector<std::string> failures =
      runRank(atoi(rank), atoi(getenv(kSizeVar)), uniqueIdFromHex(getenv(kIdVar)), timeoutMs, body->second);
  for (const std::string& f : failures) printf("FAIL %s\n", f.c_str());
  fflush(stdout);
  _exit(failures.empty() ? 0 : 1);  // no CUDA teardown at exit: not what is tested
}

std::vector<std::string> runApiRanks(const ApiJob& job, const std::string& bodyName, const ApiRankBody& body) {
  collUniqueId id;
  if (collGetUniqueId(&id) != collSuccess) return {apiFailure("collGetUniqueId", collInternalError, nullptr)};
  return job.mode == "threads" ? runThreads(job, id, body) : runProcesses(job, id, bodyName);
}

bool runEveryApiJob(const char* program, const std::vector<std::string>& modes, const std::vector<int>& ranks,
                    int hosts, const std::string& bodyName, const ApiRankBody& body) {
  const char* transports = getenv("COLL_TRANSPORTS");
  bool passed = true;
  for (const std::string& mode : modes)
    for (int n : ranks) {
      if (hosts > 1 && mode != "processes") continue;  // COLL_HOSTID groups are per process
      ApiJob job;
      job.nranks = n;
      job.hosts = hosts;
      job.mode = mode;
      job.timeoutMs = GpuJob::defaultTimeoutMs();
      const auto start = std::chrono::steady_clock::now();
      const std::vector<std::string> failures = runApiRanks(job, bodyName, body);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      for (size_t i = 0; i < failures.size() && i < 20; ++i) printf("FAIL %s\n", failures[i].c_str());
      printf("RESULT %s %s n=%d: %s (%zu failures, %.1f s; COLL_TRANSPORTS=%s)\n", program, mode.c_str(), n,
             failures.empty() ? "PASS" : "FAIL", failures.size(), secs, transports != nullptr ? transports : "");
      fflush(stdout);
      passed = passed && failures.empty();
    }
  return passed;
}

}  // namespace colltest
