// The ...OnStream forms of the sharded communication functions, where there is no GPU: a NULL
// stream is the host function, bit for bit, for every function, op, accumulation and float type;
// a stream is refused before any write or any peer is reached, naming the function, after the
// arguments' own checks. (tests/cuda/gpu_zero_comm.cc runs them on device memory.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/cuda_device.h"
#include "rank_launcher.h"
#include "sharded_cases.h"

namespace zerotest {
namespace {

using colltest::joinFailures;

// Runs `call` twice on copies of the same inputs, as the host function and as the OnStream form
// with a NULL stream; "" when both left the same bytes everywhere.
struct Inputs {
  TypedBuffer bucket, grads, shard, out;
  Inputs(const collZeroPartition_t& p, collDataType_t type)
      : bucket(type, p.paddedCount), grads(type, p.paddedCount), shard(type, p.shardCount), out(type, p.paddedCount) {
    for (size_t i = 0; i < p.paddedCount; ++i) {
      bucket.set(i, gradValue(p.rank, i));
      grads.set(i, gradValue(p.rank, i + 1));
    }
    for (size_t j = 0; j < p.shardCount; ++j) shard.set(j, priorValue(p.rank, j));
  }
  bool operator==(const Inputs& o) const {
    return bucket.bytes() == o.bucket.bytes() && grads.bytes() == o.grads.bytes() && shard.bytes() == o.shard.bytes() &&
           out.bytes() == o.out.bytes();
  }
};

std::vector<std::string> nullStreamBody(collComm_t comm, int rank, int nranks) {
  std::vector<std::string> failures;
  collZeroPartition_t p;
  if (collZeroPartitionInit(&p, 517, nranks, rank, 3) != collSuccess) return {"partition init failed"};
  const size_t S = p.shardCount;
  for (collDataType_t type : {collFloat32, collFloat16, collBfloat16})
    for (collRedOp_t op : {collSum, collAvg})
      for (int accumulate : {0, 1}) {
        Inputs host(p, type), device(p, type);
        auto check = [&](const char* what, collResult_t a, collResult_t b) {
          if (a != collSuccess || b != collSuccess)
            failures.push_back(std::string(what) + " failed: " + collGetLastError(nullptr));
          else if (!(host == device))
            failures.push_back(std::string(what) + ": the NULL-stream form left other bytes, " + typeName(type));
        };
        check("range",
              collZeroReduceScatterRange(host.bucket.data(), S / 2, S + 3, host.shard.data(), accumulate, type, op, &p,
                                         comm),
              collZeroReduceScatterRangeOnStream(device.bucket.data(), S / 2, S + 3, device.shard.data(), accumulate,
                                                 type, op, &p, comm, nullptr));
        check(
            "gradients",
            collZeroReduceScatterGradients(host.grads.data(), host.shard.data(), S - 1, accumulate, type, op, &p, comm),
            collZeroReduceScatterGradientsOnStream(device.grads.data(), device.shard.data(), S - 1, accumulate, type,
                                                   op, &p, comm, nullptr));
        check("gather range",
              collZeroAllGatherRange(host.shard.data(), 1, p.paddedCount - 2, host.out.data(), type, &p, comm),
              collZeroAllGatherRangeOnStream(device.shard.data(), 1, p.paddedCount - 2, device.out.data(), type, &p,
                                             comm, nullptr));
        check("gather range in place", collZeroAllGatherRangeInPlace(S / 2, S + 2, host.out.data(), type, &p, comm),
              collZeroAllGatherRangeInPlaceOnStream(S / 2, S + 2, device.out.data(), type, &p, comm, nullptr));
        check("gather parameters",
              collZeroAllGatherParameters(host.shard.data(), host.out.data(), S + 1, type, &p, comm),
              collZeroAllGatherParametersOnStream(device.shard.data(), device.out.data(), S + 1, type, &p, comm,
                                                  nullptr));
        if (!failures.empty()) return failures;
      }
  return failures;
}

TEST(ZeroShardedCommOnStream, ANullStreamIsTheHostFunction) {
  auto failures = colltest::runAsThreadsWithMemoryStore(3, nullStreamBody);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// Each rank alone: a call that reached a peer would hang; the good call after shows none did.
std::vector<std::string> refusedStreamBody(collComm_t comm, int rank, int nranks) {
  std::vector<std::string> failures;
  collZeroPartition_t p;
  if (collZeroPartitionInit(&p, 100, nranks, rank, 0) != collSuccess) return {"partition init failed"};
  void* stream = reinterpret_cast<void*>(0x1000);
  Inputs in(p, collFloat32);
  const Inputs before(p, collFloat32);
  auto expectRefused = [&](const char* function, collResult_t rc) {
    const std::string message = collGetLastError(nullptr);
    if (rc != collInvalidUsage || message.find(function) == std::string::npos ||
        message.find("NULL stream") == std::string::npos)
      failures.push_back(std::string(function) + ": returned " + std::to_string(int(rc)) + ": " + message);
  };
  expectRefused("collZeroReduceScatterRangeOnStream",
                collZeroReduceScatterRangeOnStream(in.bucket.data(), 0, p.paddedCount, in.shard.data(), 1, collFloat32,
                                                   collSum, &p, comm, stream));
  expectRefused("collZeroReduceScatterGradientsOnStream",
                collZeroReduceScatterGradientsOnStream(in.grads.data(), in.shard.data(), 0, 0, collFloat32, collAvg, &p,
                                                       comm, stream));
  expectRefused("collZeroAllGatherRangeOnStream",
                collZeroAllGatherRangeOnStream(in.shard.data(), 0, 10, in.out.data(), collFloat32, &p, comm, stream));
  expectRefused("collZeroAllGatherRangeInPlaceOnStream",
                collZeroAllGatherRangeInPlaceOnStream(0, 10, in.out.data(), collFloat32, &p, comm, stream));
  expectRefused("collZeroAllGatherParametersOnStream",
                collZeroAllGatherParametersOnStream(in.shard.data(), in.out.data(), 7, collFloat32, &p, comm, stream));
  // The arguments' own checks come first.
  const std::string problem =
      invalidArgumentProblem(collZeroAllGatherRangeOnStream(in.shard.data(), p.paddedCount - 5, 20, in.out.data(),
                                                            collFloat32, &p, comm, stream),
                             {"collZeroAllGatherRangeOnStream", std::to_string(p.paddedCount - 5)});
  if (!problem.empty()) failures.push_back("a bad range with a stream: " + problem);
  if (!(in == before)) failures.push_back("rank " + std::to_string(rank) + ": a refused call wrote a buffer");
  // Together, a good host call: every peer is where it should be.
  if (collZeroAllGatherParameters(in.shard.data(), in.out.data(), 0, collFloat32, &p, comm) != collSuccess)
    failures.push_back(std::string("the good call after the refusals failed: ") + collGetLastError(nullptr));
  return failures;
}

TEST(ZeroShardedCommOnStream, AStreamWithoutAGpuIsRefusedBeforeAnyWrite) {
  if (coll::cudaDeviceAvailable())
    GTEST_SKIP() << "this machine has a GPU: tests/cuda/gpu_zero_comm.cc checks streams there";
  auto failures = colltest::runAsThreadsWithMemoryStore(2, refusedStreamBody);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace zerotest
