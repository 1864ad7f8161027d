#include "tests/cuda/gpu_ranks.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "bootstrap/bootstrap_ops.h"
#include "bootstrap/memory_store.h"
#include "bootstrap/unique_id.h"
#include "src/params.h"

extern char** environ;

namespace colltest {
namespace {

using coll::Clock;

constexpr const char* kRankVar = "COLL_GPU_TEST_RANK";
constexpr const char* kSizeVar = "COLL_GPU_TEST_NRANKS";
constexpr const char* kIdVar = "COLL_GPU_TEST_ID";
constexpr const char* kBodyVar = "COLL_GPU_TEST_BODY";
constexpr const char* kSpreadVar = "COLL_GPU_TEST_SPREAD";
constexpr const char* kTimeoutVar = "COLL_GPU_TEST_TIMEOUT_MS";
// A file that rank processes touch at every reportProgress: the parent's sign that they move.
constexpr const char* kHeartbeatVar = "COLL_GPU_TEST_HEARTBEAT";

std::vector<std::string> runRank(int rank, const GpuJob& job, coll::bootstrap::Store& store, const GpuRankBody& body) {
  std::vector<std::string> failures;
  const std::string who = "rank " + std::to_string(rank) + ": ";
  try {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return {who + "no CUDA device"};
    const int device = job.spreadOverGpus ? rank % count : 0;
    if (cudaSetDevice(device) != cudaSuccess) return {who + "cudaSetDevice failed"};
    const auto deadline = Clock::now() + std::chrono::milliseconds(job.timeoutMs);
    // The P2P domain set up as the communicator sets up every domain (transport/domain.h), and the
    // device engine over its channels.
    std::vector<coll::transport::PeerInfo> peers(job.nranks);
    coll::transport::TransportSettings settings;
    settings.device = device;
    settings.timeoutMs = job.timeoutMs;
    coll::transport::DomainArgs args;
    args.rank = rank;
    args.nranks = job.nranks;
    args.peers = &peers;
    for (int r = 0; r < job.nranks; ++r) args.members.push_back(r);
    args.settings = &settings;
    coll::transport::P2pDomain domain(args);
    const std::string card = domain.card(0);
    std::vector<coll::bootstrap::Bytes> all = coll::bootstrap::allGather(
        store, "gpu/p2p", rank, job.nranks, coll::bootstrap::Bytes(card.begin(), card.end()), deadline);
    std::vector<std::string> cards;
    for (const auto& c : all) cards.emplace_back(c.begin(), c.end());
    domain.connect(0, cards, deadline);
    coll::Params params;
    // Rank processes under MPS exchange their call buffers for the direct all-reduce (the library
    // through its host all-gather; here through the store, one tag per exchange).
    uint64_t exchanges = 0;
    auto exchange = [&](const std::vector<uint8_t>& mine) {
      return coll::bootstrap::allGather(store, "gpu/buffers/" + std::to_string(exchanges++), rank, job.nranks, mine,
                                        Clock::now() + std::chrono::milliseconds(job.timeoutMs));
    };
    coll::DeviceEngine engine(domain, rank, job.nranks, params, job.timeoutMs, nullptr, exchange);
    cudaStream_t stream = nullptr;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return {who + "cudaStreamCreate"};
    GpuRank g{rank,    job.nranks,
              device,  domain.kernelsConcurrent() ? coll::DeviceMode::kConcurrent : coll::DeviceMode::kSerialized,
              &domain, &engine,
              &store,  stream};
    for (const std::string& f : body(g)) failures.push_back(who + f);
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    // Nobody may still write into this rank's memory when it frees it.
    coll::bootstrap::barrier(store, "gpu/done", rank, job.nranks,
                             Clock::now() + std::chrono::milliseconds(job.timeoutMs));
  } catch (const std::exception& e) {
    failures.push_back(who + e.what());
  }
  return failures;
}

}  // namespace

namespace {

std::mutex gProgressMutex;
std::map<int, std::string> gProgress;  // rank -> what it is doing
Clock::time_point gLastProgress;       // when any rank last reported

Clock::time_point lastProgress() {
  std::lock_guard<std::mutex> lock(gProgressMutex);
  return gLastProgress;
}

std::string progressOfEveryRank() {
  std::lock_guard<std::mutex> lock(gProgressMutex);
  std::string all;
  for (const auto& [rank, what] : gProgress) all += "  rank " + std::to_string(rank) + ": " + what + "\n";
  return all.empty() ? "  (no rank reported progress)\n" : all;
}

}  // namespace

pid_t spawnSelf(std::vector<std::string> vars) {
  std::vector<char*> env;
  for (std::string& v : vars) env.push_back(v.data());
  for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
  env.push_back(nullptr);
  char self[] = "/proc/self/exe";
  char* argv[] = {self, nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, env.data()) != 0) return 0;
  return pid;
}

std::string uniqueIdToHex(const collUniqueId& id) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (char c : id.internal) {
    hex += digits[(static_cast<unsigned char>(c) >> 4) & 15];
    hex += digits[static_cast<unsigned char>(c) & 15];
  }
  return hex;
}

collUniqueId uniqueIdFromHex(const std::string& hex) {
  collUniqueId id{};
  for (size_t i = 0; i < sizeof(id.internal) && 2 * i + 1 < hex.size(); ++i)
    id.internal[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return id;
}

int GpuJob::defaultTimeoutMs() {
  const char* text = getenv("COLL_TIMEOUT_MS");
  const int ms = text ? atoi(text) : 0;
  return ms > 0 ? ms : 120000;
}

void meetRanks(GpuRank& rank, const std::string& tag) {
  coll::bootstrap::barrier(*rank.store, tag, rank.rank, rank.nranks,
                           coll::Clock::now() + std::chrono::milliseconds(GpuJob::defaultTimeoutMs()));
}

Clock::time_point lastReportedProgress() { return lastProgress(); }

HeartbeatFile::HeartbeatFile() {
  char path[] = "/tmp/coll-gpu-heartbeat.XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return;
  close(fd);
  path_ = path;
}

HeartbeatFile::~HeartbeatFile() {
  if (ok()) unlink(path_.c_str());
}

std::string HeartbeatFile::assignment() const { return std::string(kHeartbeatVar) + "=" + path_; }

std::vector<std::string> awaitRankProcesses(const std::vector<pid_t>& pids, const HeartbeatFile& heartbeat,
                                            long limitMs) {
  // The heartbeat file's modification time: a number that changes whenever a rank touched it.
  auto stampOf = [&heartbeat] {
    struct stat info {};
    if (stat(heartbeat.path().c_str(), &info) != 0) return int64_t(0);
    return static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
  };
  std::vector<std::string> failures;
  const auto limit = std::chrono::milliseconds(limitMs);
  auto lastBeat = Clock::now();
  int64_t lastStamp = stampOf();
  for (size_t r = 0; r < pids.size(); ++r) {
    int status = 0;
    while (waitpid(pids[r], &status, WNOHANG) == 0) {
      if (const int64_t stamp = stampOf(); stamp != lastStamp) {
        lastStamp = stamp;
        lastBeat = Clock::now();
      }
      if (Clock::now() - lastBeat > limit) {
        for (pid_t p : pids) kill(p, SIGKILL);
        waitpid(pids[r], &status, 0);
        failures.push_back("rank " + std::to_string(r) + " reported no progress for " + std::to_string(limitMs) +
                           " ms (killed)");
        break;
      }
      usleep(10000);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
      failures.push_back("rank " + std::to_string(r) + " exited with status " + std::to_string(WEXITSTATUS(status)) +
                         " (its failures are printed above)");
    if (WIFSIGNALED(status))
      failures.push_back("rank " + std::to_string(r) + " died of signal " + std::to_string(WTERMSIG(status)));
  }
  return failures;
}

void reportProgress(int rank, const std::string& what) {
  std::lock_guard<std::mutex> lock(gProgressMutex);
  gProgress[rank] = what;
  gLastProgress = Clock::now();
  if (const char* heartbeat = getenv(kHeartbeatVar)) utimensat(AT_FDCWD, heartbeat, nullptr, 0);
}

std::vector<std::string> splitCommaList(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    if (end > start) items.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return items;
}

std::vector<int> splitRankCounts(const std::string& text) {
  std::vector<int> counts;
  for (const std::string& n : splitCommaList(text)) counts.push_back(atoi(n.c_str()));
  return counts;
}

bool gpuAvailable(std::string* why) {
  // Before the process's first CUDA call: thread ranks on one GPU need a hardware queue per stream
  // (docs/cuda.md, "Several ranks per GPU"); rank processes inherit it.
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc == cudaSuccess && count > 0) return true;
  *why = rc != cudaSuccess ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc) : "no device";
  return false;
}

bool skipWithoutGpu() {
  std::string why;
  if (gpuAvailable(&why)) return false;
  printf("SKIPPED: no CUDA device (%s)\n", why.c_str());
  return true;
}

std::vector<std::string> runGpuRanks(const std::string& mode, const GpuJob& job, const std::string& bodyName,
                                     const GpuRankBody& body) {
  return mode == "threads" ? runGpuRanksAsThreads(job, body) : runGpuRanksAsProcesses(job, bodyName);
}

coll::DeviceProgram planSumAllReduce(const GpuRank& rank, collDataType_t type, size_t elemSize, const void* sendbuff,
                                     void* recvbuff, size_t count) {
  coll::CollCall call;
  call.type = coll::CollType::kAllReduce;
  call.sendbuff = sendbuff;
  call.recvbuff = recvbuff;
  call.count = count;
  call.datatype = type;
  call.op = collSum;
  call.elemSize = elemSize;
  return coll::planDeviceCall(call, testCallContext(rank));
}

const coll::Algo* testAlgoOverrides() {
  static coll::Params params;  // its algoOverride table starts all kAuto, as the library's does
  static const bool set = [] {
    const char* text = getenv("COLL_GPU_TEST_ALGO");
    if (text == nullptr || *text == '\0') return false;
    coll::parseAlgoOverrides(text, params.algoOverride);
    return true;
  }();
  return set ? params.algoOverride : nullptr;
}

coll::DeviceCallContext testCallContext(const GpuRank& rank) {
  coll::DeviceCallContext context;
  context.rank = rank.rank;
  context.nranks = rank.nranks;
  context.mode = rank.mode;
  context.overrides = testAlgoOverrides();
  context.sharedAddressSpace = rank.domain->sharedAddressSpace();
  context.callBuffersMapped = rank.domain->mapsCallBuffers();
  return context;
}

void enqueueProgram(GpuRank& rank, const coll::DeviceProgram& program, collDataType_t type, collRedOp_t op,
                    const void* sendbuff, void* recvbuff) {
  rank.engine->enqueue(program, type, op, sendbuff, recvbuff, rank.stream);
}

std::vector<std::string> runGpuRanksAsThreads(const GpuJob& job, const GpuRankBody& body) {
  auto store = std::make_shared<coll::bootstrap::MemoryStore>();
  std::vector<std::string> failures;
  std::mutex mutex;
  std::condition_variable finished;
  int running = job.nranks;
  {
    std::lock_guard<std::mutex> lock(gProgressMutex);
    gProgress.clear();
    gLastProgress = Clock::now();
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < job.nranks; ++r)
    threads.emplace_back([&, r] {
      std::vector<std::string> mine = runRank(r, job, *store, body);
      std::lock_guard<std::mutex> lock(mutex);
      failures.insert(failures.end(), mine.begin(), mine.end());
      if (--running == 0) finished.notify_all();
    });
  // A kernel that never finishes cannot be cancelled, and its thread cannot be joined: once no
  // rank has reported progress for the limit, say where every rank was and end the program rather
  // than hang the caller. A long run that keeps moving is not stopped.
  {
    const auto limit = std::chrono::milliseconds(job.timeoutMs + 30000);
    std::unique_lock<std::mutex> lock(mutex);
    while (!finished.wait_for(lock, std::chrono::seconds(1), [&] { return running == 0; })) {
      if (Clock::now() - lastProgress() < limit) continue;
      fprintf(stderr, "TIMEOUT: %d ranks as threads reported no progress for %d ms; where each rank was:\n%s",
              job.nranks, job.timeoutMs + 30000, progressOfEveryRank().c_str());
      fflush(stderr);
      _exit(124);
    }
  }
  for (std::thread& t : threads) t.join();
  return failures;
}

std::vector<std::string> runGpuRanksAsProcesses(const GpuJob& job, const std::string& bodyName) {
  const std::string id = uniqueIdToHex(coll::bootstrap::createUniqueId());
  const HeartbeatFile heartbeat;
  if (!heartbeat.ok()) return {"mkstemp for the heartbeat file failed"};
  std::vector<pid_t> pids;
  for (int r = 0; r < job.nranks; ++r) {
    std::vector<std::string> vars = {std::string(kRankVar) + "=" + std::to_string(r),
                                     std::string(kSizeVar) + "=" + std::to_string(job.nranks),
                                     std::string(kIdVar) + "=" + id,
                                     std::string(kBodyVar) + "=" + bodyName,
                                     std::string(kSpreadVar) + "=" + (job.spreadOverGpus ? "1" : "0"),
                                     std::string(kTimeoutVar) + "=" + std::to_string(job.timeoutMs),
                                     heartbeat.assignment()};
    const pid_t pid = spawnSelf(std::move(vars));
    if (pid == 0) {
      for (pid_t p : pids) kill(p, SIGKILL);
      return {"posix_spawn of rank " + std::to_string(r) + " failed"};
    }
    pids.push_back(pid);
  }
  // The ranks are stopped once none has reported progress (touched the heartbeat) for the limit.
  return awaitRankProcesses(pids, heartbeat, job.timeoutMs + 30000);
}

int gpuRankChildMain(const std::map<std::string, GpuRankBody>& bodies) {
  const char* rankText = getenv(kRankVar);
  if (rankText == nullptr) return -1;
  GpuJob job;
  job.nranks = atoi(getenv(kSizeVar));
  job.spreadOverGpus = std::string(getenv(kSpreadVar)) == "1";
  job.timeoutMs = atoi(getenv(kTimeoutVar));
  const int rank = atoi(rankText);
  auto body = bodies.find(getenv(kBodyVar));
  if (body == bodies.end()) {
    fprintf(stderr, "rank %d: unknown body %s\n", rank, getenv(kBodyVar));
    return 1;
  }
  std::vector<std::string> failures;
  try {
    auto store = coll::bootstrap::connectStore(uniqueIdFromHex(getenv(kIdVar)),
                                               Clock::now() + std::chrono::milliseconds(job.timeoutMs));
    failures = runRank(rank, job, *store, body->second);
  } catch (const std::exception& e) {
    failures.push_back("rank " + std::to_string(rank) + ": " + e.what());
  }
  for (const std::string& f : failures) fprintf(stderr, "FAIL %s\n", f.c_str());
  return failures.empty() ? 0 : 1;
}

}  // namespace colltest
