// The sharded communication functions on device memory (collZero*OnStream) against the host
// functions, through the public API: every rank runs each call twice, on host buffers and on
// device copies of the same inputs with its stream, and the bytes must agree (exactly for sums,
// whose inputs are small integers, to one rounding of the type for averages), over the layouts and
// ranges of the host tests (tests/zero/sharded_cases.h), accumulating and not, in float32,
// float16 and bfloat16; guard bytes around every device buffer. Ranks share GPU 0 as threads or
// processes; with COLL_TRANSPORTS=^shm,p2p every byte is staged over sockets. Prints
// "RESULT gpu_zero_comm ..." lines; exits 0, 1 on a failure, 77 without a GPU.
//
// usage: gpu_zero_comm [--ranks 2,3] [--modes threads,processes] [--hosts H]
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "collective_zero.h"
#include "tests/cuda/api_args.h"
#include "tests/cuda/api_ranks.h"
#include "tests/cuda/gpu_ranks.h"
#include "tests/zero/sharded_cases.h"

namespace {

using colltest::ApiRank;
using namespace zerotest;

constexpr size_t kGuardBytes = 256;
constexpr unsigned char kGuardByte = 0xA7;

// Device memory for one buffer of every case, allocated once per rank: cudaMalloc and cudaFree
// synchronize the device, which, with ranks as threads, would wait for a peer's kernel that waits
// for this rank.
class DeviceRegion {
 public:
  explicit DeviceRegion(size_t capacity) : capacity_(capacity) {
    if (cudaMalloc(&base_, capacity + 2 * kGuardBytes) != cudaSuccess) base_ = nullptr;
  }
  ~DeviceRegion() { cudaFree(base_); }
  DeviceRegion(const DeviceRegion&) = delete;
  DeviceRegion& operator=(const DeviceRegion&) = delete;
  bool ok() const { return base_ != nullptr; }
  size_t capacity() const { return capacity_; }
  void* base() const { return base_; }

 private:
  void* base_ = nullptr;
  size_t capacity_;
};

// A host TypedBuffer's elements copied into a region (the host guard stays on the host), with
// poisoned guard bytes on both sides.
class DeviceCopy {
 public:
  DeviceCopy(const DeviceRegion& region, const TypedBuffer& host, collDataType_t type, cudaStream_t stream)
      : base_(region.base()), bytes_(host.count() * typeSize(type)), stream_(stream) {
    if (bytes_ > region.capacity()) {
      base_ = nullptr;
      return;
    }
    cudaMemsetAsync(base_, kGuardByte, bytes_ + 2 * kGuardBytes, stream_);
    cudaMemcpyAsync(data(), host.data(), bytes_, cudaMemcpyHostToDevice, stream_);
  }
  bool ok() const { return base_ != nullptr; }
  // NULL for an empty buffer, as a caller would pass.
  void* data() const { return bytes_ == 0 ? nullptr : static_cast<char*>(base_) + kGuardBytes; }
  // Copies the device bytes back into `host`; false when a guard byte changed.
  bool fetch(TypedBuffer& host) const {
    std::vector<unsigned char> all(bytes_ + 2 * kGuardBytes);
    // The call's kernels end first: a copy into pageable memory would otherwise wait for them
    // inside the driver, where it may hold up other thread ranks' copies, and with them the
    // launches those kernels wait for.
    cudaStreamSynchronize(stream_);
    cudaMemcpyAsync(all.data(), base_, all.size(), cudaMemcpyDeviceToHost, stream_);
    cudaStreamSynchronize(stream_);
    std::memcpy(host.data(), all.data() + kGuardBytes, bytes_);
    for (size_t i = 0; i < kGuardBytes; ++i)
      if (all[i] != kGuardByte || all[kGuardBytes + bytes_ + i] != kGuardByte) return false;
    return true;
  }

 private:
  void* base_;
  size_t bytes_;
  cudaStream_t stream_;
};

// Where the device's result differs from the host's by more than `op` allows, or "".
std::string compare(const TypedBuffer& device, const TypedBuffer& host, collDataType_t type, collRedOp_t op) {
  for (size_t i = 0; i < host.count(); ++i) {
    const double d = device.get(i), h = host.get(i);
    const bool same = op == collAvg ? std::fabs(d - h) <= std::fabs(h) * epsilonOf(type) : d == h;
    if (!same && !(std::isnan(d) && std::isnan(h)))
      return "element " + std::to_string(i) + ": device " + std::to_string(d) + ", host " + std::to_string(h);
  }
  return "";
}

struct Buffers {
  TypedBuffer bucket, shard, out;
  Buffers(const collZeroPartition_t& p, collDataType_t type, size_t bucketCount)
      : bucket(type, bucketCount), shard(type, p.shardCount), out(type, p.paddedCount) {}
};

std::vector<std::string> runCases(ApiRank& r) {
  std::vector<std::string> failures;
  int cases = 0;
  // The largest layout's padded buffer, in the widest type, with room to spare.
  const size_t capacity = 8192 * sizeof(float);
  DeviceRegion first(capacity), second(capacity), third(capacity);
  if (!first.ok() || !second.ok() || !third.ok()) return {"cudaMalloc failed"};
  // No rank reuses its device memory while a peer may still read it (a failed peer ends the
  // barrier with an error, not a hang).
  auto meet = [&](const std::string& after) {
    const std::string met = colltest::apiFailure("barrier", collBarrier(r.comm, nullptr), r.comm);
    if (!met.empty()) failures.push_back("after " + after + ": " + met);
    return met.empty();
  };
  for (const Layout& layout : standardLayouts()) {
    collZeroPartition_t p;
    if (collZeroPartitionInit(&p, layout.total, r.nranks, r.rank, layout.align) != collSuccess)
      return {"partition init failed"};
    for (collDataType_t type : {collFloat32, collFloat16, collBfloat16}) {
      for (const Range& range : rangesOf(p)) {
        for (collRedOp_t op : {collSum, collAvg}) {
          for (int accumulate : {0, 1}) {
            ++cases;
            const std::string what = describe("reduce-scatter range", r.rank, p, type) + " [" +
                                     std::to_string(range.begin) + ", +" + std::to_string(range.count) + ") " +
                                     (op == collAvg ? "avg" : "sum") + (accumulate ? " accumulate" : "");
            colltest::reportProgress(r.rank, what);
            Buffers host(p, type, range.count), device(p, type, range.count);
            for (size_t i = 0; i < range.count; ++i) host.bucket.set(i, gradValue(r.rank, range.begin + i));
            for (size_t j = 0; j < p.shardCount; ++j) host.shard.set(j, priorValue(r.rank, j));
            DeviceCopy bucket(first, host.bucket, type, r.stream), shard(second, host.shard, type, r.stream);
            if (!bucket.ok() || !shard.ok()) return {what + ": the case outgrows the device regions"};
            collResult_t rc = collZeroReduceScatterRange(host.bucket.data(), range.begin, range.count,
                                                         host.shard.data(), accumulate, type, op, &p, r.comm);
            if (rc != collSuccess) return {what + ": host: " + collGetLastError(nullptr)};
            rc = collZeroReduceScatterRangeOnStream(bucket.data(), range.begin, range.count, shard.data(), accumulate,
                                                    type, op, &p, r.comm, r.stream);
            if (rc != collSuccess) return {what + ": device: " + collGetLastError(nullptr)};
            if (!shard.fetch(device.shard) || !bucket.fetch(device.bucket)) return {what + ": a guard byte changed"};
            const std::string problem = compare(device.shard, host.shard, type, op);
            if (!problem.empty()) failures.push_back(what + ": gradShard " + problem);
            if (!meet(what) || failures.size() >= 10) return failures;
          }
        }
        ++cases;
        const std::string what = describe("all-gather range", r.rank, p, type) + " [" + std::to_string(range.begin) +
                                 ", +" + std::to_string(range.count) + ")";
        colltest::reportProgress(r.rank, what);
        Buffers host(p, type, range.count), device(p, type, range.count);
        for (size_t j = 0; j < p.shardCount; ++j) host.shard.set(j, paramValue(type, p.shardOffset + j));
        TypedBuffer hostOut(type, range.count), deviceOut(type, range.count);
        DeviceCopy shard(first, host.shard, type, r.stream), out(second, hostOut, type, r.stream);
        if (!shard.ok() || !out.ok()) return {what + ": the case outgrows the device regions"};
        collResult_t rc =
            collZeroAllGatherRange(host.shard.data(), range.begin, range.count, hostOut.data(), type, &p, r.comm);
        if (rc != collSuccess) return {what + ": host: " + collGetLastError(nullptr)};
        rc = collZeroAllGatherRangeOnStream(shard.data(), range.begin, range.count, out.data(), type, &p, r.comm,
                                            r.stream);
        if (rc != collSuccess) return {what + ": device: " + collGetLastError(nullptr)};
        if (!out.fetch(deviceOut)) return {what + ": a guard byte changed"};
        const std::string problem = compare(deviceOut, hostOut, type, collSum);
        if (!problem.empty()) failures.push_back(what + ": out " + problem);
        if (!meet(what) || failures.size() >= 10) return failures;
        // In place: only this rank's piece is in out beforehand, the rest poisoned.
        TypedBuffer seeded(type, range.count), inPlaceOut(type, range.count);
        const size_t lo = std::max(range.begin, p.shardOffset);
        const size_t hi = std::min(range.begin + range.count, p.shardOffset + p.shardCount);
        for (size_t k = 0; k < range.count; ++k) {
          const size_t i = range.begin + k;
          seeded.set(k, i >= lo && i < hi ? hostOut.get(k) : -1.0e4);
        }
        DeviceCopy seededOut(third, seeded, type, r.stream);
        if (!seededOut.ok()) return {what + " in place: the case outgrows the device regions"};
        if (collZeroAllGatherRangeInPlaceOnStream(range.begin, range.count, seededOut.data(), type, &p, r.comm,
                                                  r.stream) != collSuccess)
          return {what + " in place: device: " + collGetLastError(nullptr)};
        if (!seededOut.fetch(inPlaceOut)) return {what + " in place: a guard byte changed"};
        const std::string inPlaceProblem = compare(inPlaceOut, hostOut, type, collSum);
        if (!inPlaceProblem.empty()) failures.push_back(what + " in place: out " + inPlaceProblem);
        if (!meet(what + " in place") || failures.size() >= 10) return failures;
      }
      // The whole buffer in buckets, both directions.
      for (size_t bucketCount : bucketCountsOf(p)) {
        ++cases;
        const std::string what =
            describe("bucketed gradients and parameters", r.rank, p, type) + " bucket " + std::to_string(bucketCount);
        colltest::reportProgress(r.rank, what);
        Buffers host(p, type, p.paddedCount), device(p, type, p.paddedCount);
        for (size_t i = 0; i < p.paddedCount; ++i) host.bucket.set(i, gradValue(r.rank, i));
        DeviceCopy grads(first, host.bucket, type, r.stream), shard(second, host.shard, type, r.stream),
            params(third, host.out, type, r.stream);
        if (!grads.ok() || !shard.ok() || !params.ok()) return {what + ": the case outgrows the device regions"};
        if (collZeroReduceScatterGradients(host.bucket.data(), host.shard.data(), bucketCount, 0, type, collSum, &p,
                                           r.comm) != collSuccess ||
            collZeroAllGatherParameters(host.shard.data(), host.out.data(), bucketCount, type, &p, r.comm) !=
                collSuccess)
          return {what + ": host: " + collGetLastError(nullptr)};
        if (collZeroReduceScatterGradientsOnStream(grads.data(), shard.data(), bucketCount, 0, type, collSum, &p,
                                                   r.comm, r.stream) != collSuccess ||
            collZeroAllGatherParametersOnStream(shard.data(), params.data(), bucketCount, type, &p, r.comm, r.stream) !=
                collSuccess)
          return {what + ": device: " + collGetLastError(nullptr)};
        if (!params.fetch(device.out) || !shard.fetch(device.shard)) return {what + ": a guard byte changed"};
        const std::string problem = compare(device.out, host.out, type, collSum);
        if (!problem.empty()) failures.push_back(what + ": params " + problem);
        if (!meet(what) || failures.size() >= 10) return failures;
      }
    }
  }
  // A host buffer with a stream is refused before any peer is reached (every rank makes the call).
  collZeroPartition_t p;
  collZeroPartitionInit(&p, 100, r.nranks, r.rank, 0);
  std::vector<float> hostShard(p.shardCount, 1.0f), hostParams(p.paddedCount, 0.0f);
  const collResult_t rc =
      collZeroAllGatherParametersOnStream(hostShard.data(), hostParams.data(), 0, collFloat32, &p, r.comm, r.stream);
  const std::string message = collGetLastError(nullptr);
  if (rc != collInvalidArgument || message.find("shard") == std::string::npos)
    failures.push_back("a host shard with a stream: returned " + std::to_string(int(rc)) + ": " + message);
  if (r.rank == 0) printf("rank 0 ran %d cases\n", cases);
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, colltest::ApiRankBody> bodies = {{"zero_comm", runCases}};
  if (int status = colltest::apiRankChildMain(bodies); status >= 0) return status;
  colltest::ApiArgs args;
  args.ranks = {2, 3};
  if (!colltest::parseApiArgs(argc, argv, "gpu_zero_comm [--ranks 2,3] [--modes threads,processes] [--hosts H]", &args))
    return 2;
  if (colltest::skipWithoutGpu()) return 77;
  // Thread ranks share one GPU's hardware queues: one per stream (docs/cuda.md).
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
  return colltest::runEveryApiJob("gpu_zero_comm", args.modes, args.ranks, args.hosts, "zero_comm", runCases) ? 0 : 1;
}
