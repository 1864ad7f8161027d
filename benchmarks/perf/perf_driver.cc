#include "perf_driver.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "perf_args.h"
#include "perf_memory.h"

namespace collperf {
namespace {

using Clock = std::chrono::steady_clock;

// One rank's identity, gathered on every rank for the header.
struct RankInfo {
  int32_t pid;
  int32_t device;  // -1: host memory
  char host[56];
};
static_assert(sizeof(RankInfo) == 64, "RankInfo is exchanged as 64 bytes");

struct Measurement {
  bool measured = false;
  double seconds = 0;
  double algBw = 0;
  double busBw = 0;
  uint64_t wrong = 0;
};

class Driver {
 public:
  Driver(const CollDescriptor& coll, PerfArgs args) : coll_(coll), args_(std::move(args)) {}
  int run();

 private:
  bool chooseMemory();
  void keepDeviceMemoryIfSupported();
  void init();
  void check(collResult_t r, const char* what);
  collResult_t finish(collResult_t r);
  void allocate();
  void printHeader();
  void sweep(const TypeInfo& type, const OpInfo& op);
  Measurement measure(const TypeInfo& type, const OpInfo& op, const LayoutArgs& la, const Layout& layout, bool inPlace,
                      int iters, int warmups);
  double maxOverRanks(double v);
  uint64_t sumOverRanks(uint64_t v);

  const CollDescriptor& coll_;
  PerfArgs args_;
  std::unique_ptr<PerfMemory> memory_;
  collComm_t comm_ = nullptr;
  int rank_ = 0;
  int nranks_ = 1;
  char* send_ = nullptr;
  char* recv_ = nullptr;
  double busBwSum_ = 0;
  int busBwCount_ = 0;
  uint64_t totalWrong_ = 0;
};

// Without a launcher's variables the program runs as a single rank (like nccl-tests started alone).
bool startedByALauncher() {
  for (const char* var : {"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
                          "SLURM_PROCID", "COLL_BOOTSTRAP"}) {
    const char* v = getenv(var);
    if (v != nullptr && *v != '\0') return true;
  }
  return false;
}

std::string formatTime(double us) {
  char buf[32];
  if (us >= 10000.0) {
    snprintf(buf, sizeof(buf), "%7.0f", us);
  } else if (us >= 100.0) {
    snprintf(buf, sizeof(buf), "%7.1f", us);
  } else if (us >= 1.0) {
    snprintf(buf, sizeof(buf), "%7.2f", us);
  } else {
    snprintf(buf, sizeof(buf), "%7.3f", us);  // small calls differ by tens of nanoseconds
  }
  return buf;
}

// A list of counts or sizes as the flags take it: "20", or "200000,1000,5".
template <typename T>
std::string joined(const std::vector<T>& values) {
  std::string text;
  for (T value : values) text += (text.empty() ? "" : ",") + std::to_string(value);
  return text;
}

std::string rtrim(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string centered(const char* text, size_t width) {
  size_t len = strlen(text);
  size_t left = len >= width ? 0 : (width - len) / 2;
  std::string s(left, ' ');
  s += text;
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

void Driver::check(collResult_t r, const char* what) {
  r = finish(r);
  if (r == collSuccess) return;
  fprintf(stderr, "%s: rank %d: %s failed: %s: %s\n", coll_.programName, rank_, what, collGetErrorString(r),
          collGetLastError(comm_));
  fflush(stderr);
  exit(1);
}

// A non-blocking communicator (-z 0) may answer collInProgress: wait for the operation to end.
collResult_t Driver::finish(collResult_t r) {
  while (r == collInProgress && comm_ != nullptr) {
    collResult_t state = collInProgress;
    collResult_t q = collCommGetAsyncError(comm_, &state);
    if (q != collSuccess) return q;
    r = state;
    if (r == collInProgress) sched_yield();
  }
  return r;
}

void Driver::init() {
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = coll_.programName;
  collResult_t r;
  if (startedByALauncher()) {
    r = collCommInitFromEnv(&comm_, args_.blocking ? nullptr : &config);
  } else {
    // Alone: a unique id's store binds its own ephemeral port, so no port is picked in advance
    // (picking one and closing it raced with other programs doing the same).
    collUniqueId id;
    r = collGetUniqueId(&id);
    if (r == collSuccess) r = collCommInitRankConfig(&comm_, 1, id, 0, args_.blocking ? nullptr : &config);
  }
  r = finish(r);
  if (r != collSuccess) {
    fprintf(stderr, "%s: rank %s: communicator init failed: %s: %s\n", coll_.programName, launcherRank(),
            collGetErrorString(r), collGetLastError(nullptr));
    if (!startedByALauncher())
      fprintf(stderr, "For several ranks, start the program with a launcher that sets RANK, WORLD_SIZE, MASTER_ADDR "
                      "and MASTER_PORT, e.g. collrun -n 2 %s\n", coll_.programName);
    exit(1);
  }
  check(collCommUserRank(comm_, &rank_), "collCommUserRank");
  check(collCommCount(comm_, &nranks_), "collCommCount");
  if (coll_.hasRoot && args_.root >= nranks_) {
    if (rank_ == 0) fprintf(stderr, "%s: -r %d: the root must be in [0, %d)\n", coll_.programName, args_.root, nranks_);
    exit(2);
  }
}

void Driver::allocate() {
  size_t sendBytes = 64, recvBytes = 64;
  for (const TypeInfo* t : args_.types) {
    LayoutArgs la{args_.maxBytes / t->size, nranks_, rank_, args_.root, args_.counts};
    Layout l = coll_.layout(la);
    size_t inplace = std::max(l.inplaceSendOffset + l.sendCount, l.inplaceRecvOffset + l.recvCount);
    sendBytes = std::max(sendBytes, l.sendCount * t->size);
    recvBytes = std::max(recvBytes, std::max(l.recvCount, inplace) * t->size);
  }
  send_ = memory_->allocate(sendBytes);
  recv_ = memory_->allocate(recvBytes);
}

void Driver::printHeader() {
  RankInfo mine{};
  mine.pid = static_cast<int32_t>(getpid());
  mine.device = memory_->device();
  gethostname(mine.host, sizeof(mine.host) - 1);
  std::vector<RankInfo> all(static_cast<size_t>(nranks_));
  check(collAllGather(&mine, all.data(), sizeof(RankInfo), collUint8, comm_, nullptr), "collAllGather (rank info)");
  if (rank_ != 0) return;
  int version = 0;
  collGetVersion(&version);
  printf("# Collective test starting: %s (libcollective %d.%d.%d)\n", coll_.programName, version / 10000,
         version / 100 % 100, version % 100);
  printf("# Command: %s\n", args_.commandLine.c_str());
  // The variable-count programs' split of each size between ranks (--counts), which decides what
  // their rows measure.
  if (!coll_.layout(LayoutArgs{0, nranks_, 0, 0, args_.counts}).recvcounts.empty())
    printf("# Counts per rank: %s (--counts)\n", countPatternName(args_.counts));
  if (!args_.sizeList.empty()) {
    printf("# nRanks %d sizes: %s warmup iters: %s iters: %s validation: %d blocking: %d\n", nranks_,
           joined(args_.sizeList).c_str(), joined(args_.warmups).c_str(), joined(args_.iters).c_str(),
           args_.check ? 1 : 0, args_.blocking ? 1 : 0);
  } else if (args_.stepFactor > 1) {
    printf(
        "# nRanks %d minBytes %zu maxBytes %zu step: %zu(factor) warmup iters: %s iters: %s validation: %d "
        "blocking: %d\n",
        nranks_, args_.minBytes, args_.maxBytes, args_.stepFactor, joined(args_.warmups).c_str(),
        joined(args_.iters).c_str(), args_.check ? 1 : 0, args_.blocking ? 1 : 0);
  } else {
    printf(
        "# nRanks %d minBytes %zu maxBytes %zu step: %zu(bytes) warmup iters: %s iters: %s validation: %d "
        "blocking: %d\n",
        nranks_, args_.minBytes, args_.maxBytes, args_.stepBytes, joined(args_.warmups).c_str(),
        joined(args_.iters).c_str(), args_.check ? 1 : 0, args_.blocking ? 1 : 0);
  }
  printf("#\n# Using devices: %s\n", memory_->device() < 0 ? "host memory" : "GPU memory");
  for (int r = 0; r < nranks_; ++r) {
    RankInfo& info = all[static_cast<size_t>(r)];
    info.host[sizeof(info.host) - 1] = '\0';
    if (info.device < 0) {
      printf("#  Rank %2d Pid %6d on %10s host memory\n", r, static_cast<int>(info.pid), info.host);
    } else {
      printf("#  Rank %2d Pid %6d on %10s device %2d\n", r, static_cast<int>(info.pid), info.host,
             static_cast<int>(info.device));
    }
  }
  printf("#\n");
  std::string lead = "# " + std::string(10 + 2 + 12 + 2 + 8 + 2 + 6 + 2 + 6, ' ');
  printf("%s\n", rtrim(lead + centered("out-of-place", 32) + centered("in-place", 32)).c_str());
  char line[256];
  snprintf(line, sizeof(line), "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s", "size", "count",
           "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  printf("%s\n", line);
  snprintf(line, sizeof(line), "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s", "(B)", "(elements)",
           "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  printf("%s\n", rtrim(line).c_str());
  fflush(stdout);
}

double Driver::maxOverRanks(double v) {
  double out = v;
  check(collAllReduce(&v, &out, 1, collFloat64, collMax, comm_, nullptr), "collAllReduce (time)");
  return out;
}

uint64_t Driver::sumOverRanks(uint64_t v) {
  uint64_t out = v;
  check(collAllReduce(&v, &out, 1, collUint64, collSum, comm_, nullptr), "collAllReduce (#wrong)");
  return out;
}

Measurement Driver::measure(const TypeInfo& type, const OpInfo& op, const LayoutArgs& la, const Layout& l, bool inPlace,
                            int iters, int warmups) {
  const size_t ts = type.size;
  char* sendPtr = l.sendUsed ? send_ : nullptr;
  char* recvPtr = l.recvUsed ? recv_ : nullptr;
  size_t region = 0;  // the in-place buffer's extent, in elements
  if (inPlace) {
    char* base = recv_;
    bool both = l.sendUsed && l.recvUsed;
    sendPtr = l.sendUsed ? base + (both ? l.inplaceSendOffset * ts : 0) : nullptr;
    recvPtr = l.recvUsed ? base + (both ? l.inplaceRecvOffset * ts : 0) : nullptr;
    region = both ? std::max(l.inplaceSendOffset + l.sendCount, l.inplaceRecvOffset + l.recvCount)
                  : (l.sendUsed ? l.sendCount : l.recvCount);
  }
  DataSpec spec{&type, patternFor(coll_.hasOp, op.op), op.op, rank_, nranks_};
  CallArgs call{sendPtr, recvPtr, l.paramCount, type.type,         op.op, args_.root,
                rank_,   nranks_, comm_,        memory_->stream(), &l};
  auto runOnce = [&]() { check(coll_.run(call), coll_.apiName); };

  if (sendPtr != nullptr) memory_->fillInput(spec, sendPtr, l.sendCount);
  for (int i = 0; i < warmups; ++i) runOnce();
  memory_->synchronize();
  check(collBarrier(comm_, nullptr), "collBarrier");
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) runOnce();
  memory_->synchronize();  // device calls only enqueue: the time is until they finished
  double local = std::chrono::duration<double>(Clock::now() - t0).count() / iters;

  Measurement m;
  m.measured = true;
  m.seconds = maxOverRanks(local);
  size_t bytes = std::max(l.sendCount, l.recvCount) * ts;
  m.algBw = m.seconds > 0 ? static_cast<double>(bytes) / 1e9 / m.seconds : 0;
  m.busBw = m.algBw * coll_.busBwFactor(nranks_);
  if (args_.check) {
    if (inPlace) {
      memory_->fillPoison(type, recv_, region);
    } else if (recvPtr != nullptr) {
      memory_->fillPoison(type, recvPtr, l.recvCount);
    }
    if (sendPtr != nullptr) memory_->fillInput(spec, sendPtr, l.sendCount);
    runOnce();
    memory_->synchronize();
    std::vector<Segment> segments;
    if (recvPtr != nullptr) coll_.expected(la, &segments);
    m.wrong = sumOverRanks(recvPtr != nullptr ? memory_->countWrong(spec, recvPtr, l.recvCount, segments) : 0);
  }
  return m;
}

void Driver::sweep(const TypeInfo& type, const OpInfo& op) {
  const std::vector<size_t> sizes = sizesToRun(args_);
  for (size_t index = 0; index < sizes.size(); ++index) {
    const size_t size = sizes[index];
    LayoutArgs la{size / type.size, nranks_, rank_, args_.root, args_.counts};
    Layout l = coll_.layout(la);
    if (rank_ == 0) {
      printf("%12zu  %12zu  %8s  %6s  %6d", std::max(l.sendCount, l.recvCount) * type.size, l.paramCount, type.name,
             coll_.hasOp ? op.name : "none", coll_.hasRoot ? args_.root : -1);
      fflush(stdout);
    }
    for (bool inPlace : {false, true}) {
      Measurement m;
      if (!inPlace || coll_.inPlace)
        m = measure(type, op, la, l, inPlace, countFor(args_.iters, index), countFor(args_.warmups, index));
      totalWrong_ += m.wrong;  // already summed over ranks: every rank knows
      if (rank_ != 0) continue;
      if (!m.measured) {
        printf("  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A");
        continue;
      }
      std::string wrong = args_.check ? std::to_string(m.wrong) : "N/A";
      printf("  %7s  %6.2f  %6.2f  %5s", formatTime(m.seconds * 1e6).c_str(), m.algBw, m.busBw, wrong.c_str());
      fflush(stdout);
      busBwSum_ += m.busBw;
      ++busBwCount_;
    }
    if (rank_ == 0) {
      printf("\n");
      fflush(stdout);
    }
  }
}

// -m: host memory, GPU memory, or (by default) GPU memory where this rank has a GPU.
bool Driver::chooseMemory() {
  std::string why;
  if (coll_.hostMemoryOnly && args_.memory == MemoryKind::kDevice) {
    fprintf(stderr, "%s: rank %s: -m device: %s takes host memory for now (docs/api.md); use -m host\n",
            coll_.programName, launcherRank(), coll_.apiName);
    return false;
  }
  if (coll_.hostMemoryOnly) args_.memory = MemoryKind::kHost;
  if (args_.memory != MemoryKind::kHost) memory_ = makeDeviceMemory(&why);
  if (memory_ == nullptr && args_.memory == MemoryKind::kDevice) {
    // Every rank says it, with its rank: a rank may lack a GPU alone, and then it is the only one
    // that knows why the job ends.
    fprintf(stderr, "%s: rank %s: -m device: no CUDA device: %s; use -m host for host memory\n", coll_.programName,
            launcherRank(), why.c_str());
    return false;
  }
  if (memory_ == nullptr) memory_ = makeHostMemory();
  return true;
}

// By default GPU memory is used only where the library runs device calls: a zero-count call on
// the stream (a no-op that touches nothing) tells. -m device keeps GPU memory regardless, so its
// first call reports why it cannot run.
void Driver::keepDeviceMemoryIfSupported() {
  if (args_.memory != MemoryKind::kAuto || memory_->device() < 0) return;
  if (collAllReduce(nullptr, nullptr, 0, collFloat32, collSum, comm_, memory_->stream()) == collSuccess) return;
  if (rank_ == 0) printf("# GPU memory not used: %s\n", collGetLastError(comm_));
  memory_ = makeHostMemory();
}

int Driver::run() {
  if (!chooseMemory()) return 1;
  init();
  keepDeviceMemoryIfSupported();
  allocate();
  printHeader();
  for (const TypeInfo* type : args_.types) {
    for (const OpInfo* op : args_.ops) sweep(*type, *op);
  }
  uint64_t wrong = totalWrong_;
  if (rank_ == 0) {
    printf("# Out of bounds values : %llu %s\n", static_cast<unsigned long long>(wrong), wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g\n", busBwCount_ ? busBwSum_ / busBwCount_ : 0.0);
    printf("#\n# Collective test concluded: %s\n", coll_.programName);
    fflush(stdout);
  }
  check(collCommFinalize(comm_), "collCommFinalize");
  check(collCommDestroy(comm_), "collCommDestroy");
  comm_ = nullptr;
  return wrong ? 1 : 0;
}

}  // namespace

int perfMain(int argc, char** argv, const CollDescriptor& coll) {
  PerfArgs args;
  switch (parsePerfArgs(argc, argv, coll.programName, coll.hasOp, &args)) {
    case ArgsOutcome::kExitSuccess:
      return 0;
    case ArgsOutcome::kUsageError:
      return 2;
    case ArgsOutcome::kRun:
      break;
  }
  Driver driver(coll, std::move(args));
  return driver.run();
}

}  // namespace collperf
