// Device memory between "hosts" on one GPU, through the public API (docs/cuda.md, "Device memory
// across hosts"): every collective x type x op x size of gpu_cases.h on 2, 3 and 4 ranks, each
// call with a stream, checked against tests/multirank/reference.h with poisoned outputs and
// guards. Run with COLL_TRANSPORTS=^shm,p2p every byte of device memory goes through the staged
// transport over sockets (with COLL_TRANSPORTS=verbs,staged over the verbs emulator); with
// --hosts 2, rank processes are two COLL_HOSTID hosts: P2P inside each, staging between them.
// --bench times the device all-reduce against the host all-reduce over the same sockets
// (gpu_staged_bench.cc). Prints "RESULT gpu_staged ..." lines; exits 0, 1 on a failure, 77
// without a GPU.
//
// usage: gpu_staged [--ranks 2,3,4] [--modes processes,threads] [--hosts H] [--filter TEXT]
//                   [--quick] [--bench MAX_BYTES]
// --quick keeps float32, bfloat16 and int32 (every collective and op still).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/cuda/api_args.h"
#include "tests/cuda/api_ranks.h"
#include "tests/cuda/gpu_cases.h"
#include "tests/cuda/gpu_ranks.h"
#include "tests/cuda/gpu_staged_bench.h"

namespace {

using coll::CollType;
using colltest::ApiRank;
using colltest::GpuCase;
using Clock = std::chrono::steady_clock;

constexpr const char* kQuickVar = "COLL_GPU_STAGED_QUICK";

// The cases every rank runs: the API chooses the protocol, so COLL_PROTO variants are dropped.
std::vector<GpuCase> stagedCases(int n) {
  const char* filter = getenv(colltest::kGpuTestFilterVar);
  std::vector<GpuCase> all = colltest::gpuCases(n, false, filter != nullptr ? filter : "");
  const bool quick = getenv(kQuickVar) != nullptr;
  std::vector<GpuCase> cases;
  for (const GpuCase& c : all) {
    if (c.protocol != coll::ProtoChoice::kAuto) continue;
    if (quick && c.datatype != collFloat32 && c.datatype != collBfloat16 && c.datatype != collInt32) continue;
    cases.push_back(c);
  }
  return cases;
}

// The case's call through the public API on the rank's stream. Buffers a rank passes none of
// (a non-root's) are any valid device address: the library does not touch them.
std::string issue(const ApiRank& r, const GpuCase& c, const coll::CollCall& call, char* anywhere) {
  const void* send = call.sendbuff != nullptr ? call.sendbuff : anywhere;
  void* recv = call.recvbuff != nullptr ? call.recvbuff : anywhere;
  const size_t k = c.count;
  const collDataType_t t = c.datatype;
  collResult_t rc = collSuccess;
  switch (c.type) {
    case CollType::kAllReduce:
      rc = collAllReduce(send, recv, k, t, c.op, r.comm, r.stream);
      break;
    case CollType::kBroadcast:
      rc = collBroadcast(send, recv, k, t, c.root, r.comm, r.stream);
      break;
    case CollType::kReduce:
      rc = collReduce(send, recv, k, t, c.op, c.root, r.comm, r.stream);
      break;
    case CollType::kAllGather:
      rc = collAllGather(send, recv, k, t, r.comm, r.stream);
      break;
    case CollType::kReduceScatter:
      rc = collReduceScatter(send, recv, k, t, c.op, r.comm, r.stream);
      break;
    case CollType::kGather:
      rc = collGather(send, recv, k, t, c.root, r.comm, r.stream);
      break;
    case CollType::kScatter:
      rc = collScatter(send, recv, k, t, c.root, r.comm, r.stream);
      break;
    case CollType::kAllToAll:
      rc = collAllToAll(send, recv, k, t, r.comm, r.stream);
      break;
    default: {  // a ring of sends and receives in one group
      collGroupStart();
      const collResult_t s = collSend(send, k, t, (r.rank + 1) % r.nranks, r.comm, r.stream);
      const collResult_t v = collRecv(recv, k, t, (r.rank - 1 + r.nranks) % r.nranks, r.comm, r.stream);
      rc = collGroupEnd();
      if (rc == collSuccess) rc = s != collSuccess ? s : v;
    }
  }
  return colltest::apiFailure(c.describe().c_str(), rc, r.comm);
}

std::vector<std::string> runCases(ApiRank& r) {
  const std::vector<GpuCase> cases = stagedCases(r.nranks);
  colltest::GpuArena arena(cases, r.rank, r.nranks);
  const GpuCase* current = nullptr;
  colltest::GpuCaseRun run;
  run.rank = r.rank;
  run.nranks = r.nranks;
  run.stream = r.stream;
  run.issue = [&](const coll::CollCall& call) { return issue(r, *current, call, arena.device()); };
  run.asyncError = [&]() -> std::string {
    collResult_t async = collSuccess;
    collCommGetAsyncError(r.comm, &async);
    return async == collSuccess ? "" : std::string(collGetErrorString(async)) + ": " + collGetLastError(r.comm);
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    current = &cases[i];
    colltest::reportProgress(r.rank, "case " + std::to_string(i) + ": " + cases[i].describe());
    const std::string f = colltest::runGpuCaseWith(run, cases[i], arena);
    if (!f.empty()) return {"case " + std::to_string(i) + " " + cases[i].describe() + ": " + f};
    // No rank reuses its buffers while a peer may still read them: a host barrier over the
    // communicator (the peers' failure ends it with an error, not a hang).
    const std::string met = colltest::apiFailure("barrier", collBarrier(r.comm, nullptr), r.comm);
    if (!met.empty()) return {"after case " + std::to_string(i) + ": " + met};
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, colltest::ApiRankBody> bodies = {{"cases", runCases},
                                                               {"bench", colltest::runStagedBench}};
  if (int status = colltest::apiRankChildMain(bodies); status >= 0) return status;
  colltest::ApiArgs args;
  args.modes = {"processes"};
  size_t benchBytes = 0;
  const colltest::ExtraOption extra = [&](int argc, char** argv, int& i) {
    if (!strcmp(argv[i], "--quick")) {
      setenv(kQuickVar, "1", 1);
    } else if (!strcmp(argv[i], "--bench") && i + 1 < argc) {
      benchBytes = strtoull(argv[++i], nullptr, 10);
    } else {
      return false;
    }
    return true;
  };
  if (!colltest::parseApiArgs(argc, argv,
                              "gpu_staged [--ranks 2,3,4] [--modes processes,threads] [--hosts H] [--filter TEXT] "
                              "[--quick] [--bench MAX_BYTES]",
                              &args, extra))
    return 2;
  if (colltest::skipWithoutGpu()) return 77;
  // Thread ranks share one GPU's hardware queues: one per stream (docs/cuda.md).
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  const char* transports = getenv("COLL_TRANSPORTS");
  bool passed = true;
  for (const std::string& mode : args.modes)
    for (int n : benchBytes > 0 ? std::vector<int>{2} : args.ranks) {
      if (args.hosts > 1 && mode != "processes") continue;  // COLL_HOSTID groups are per process
      colltest::ApiJob job;
      job.nranks = n;
      job.hosts = args.hosts;
      job.mode = mode;
      job.timeoutMs = colltest::GpuJob::defaultTimeoutMs();
      if (benchBytes > 0) setenv("COLL_GPU_STAGED_BENCH_BYTES", std::to_string(benchBytes).c_str(), 1);
      const char* body = benchBytes > 0 ? "bench" : "cases";
      const Clock::time_point start = Clock::now();
      const std::vector<std::string> failures = colltest::runApiRanks(
          job, body,
          benchBytes > 0 ? colltest::ApiRankBody(colltest::runStagedBench) : colltest::ApiRankBody(runCases));
      const double secs = std::chrono::duration<double>(Clock::now() - start).count();
      for (const std::string& f : failures) printf("FAIL %s\n", f.c_str());
      printf("RESULT gpu_staged %s%s n=%d: %s (%zu cases, %.1f s; COLL_TRANSPORTS=%s)\n", body,
             args.hosts > 1 ? (" " + mode + " hosts=" + std::to_string(args.hosts)).c_str() : (" " + mode).c_str(), n,
             failures.empty() ? "PASS" : "FAIL", benchBytes > 0 ? size_t(0) : stagedCases(n).size(), secs,
             transports != nullptr ? transports : "");
      fflush(stdout);
      passed = passed && failures.empty();
    }
  return passed ? 0 : 1;
}
