// Bad arguments to the sharded communication functions: each must return collInvalidArgument with
// a message that names the function and the value, before writing a buffer or reaching a peer. The
// ranks make the bad calls on their own (a call that reached a peer would hang or fail the good
// collective that follows), then one good call together to show the communicator still works.
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "rank_launcher.h"
#include "sharded_cases.h"

namespace zerotest {
namespace {

using colltest::joinFailures;

struct Buffers {
  TypedBuffer bucket, shard, params;
  explicit Buffers(const collZeroPartition_t& p, collDataType_t type = collFloat32)
      : bucket(type, p.paddedCount), shard(type, p.shardCount), params(type, p.paddedCount) {
    for (size_t i = 0; i < p.paddedCount; ++i) bucket.set(i, gradValue(p.rank, i));
    for (size_t j = 0; j < p.shardCount; ++j) shard.set(j, paramValue(type, p.shardOffset + j));
  }
};

// Runs one bad call on fresh buffers and checks its result, message and that no buffer changed.
class BadCallChecker {
 public:
  BadCallChecker(const collZeroPartition_t& p, std::vector<std::string>& failures) : p_(p), failures_(failures) {}

  void expect(const std::string& name, std::initializer_list<std::string> pieces,
              const std::function<collResult_t(Buffers&)>& call) {
    Buffers b(p_);
    const auto bucket = b.bucket.bytes(), shard = b.shard.bytes(), params = b.params.bytes();
    const collResult_t rc = call(b);
    const std::string problem = invalidArgumentProblem(rc, pieces);
    const std::string where = "rank " + std::to_string(p_.rank) + ": " + name + ": ";
    if (!problem.empty()) failures_.push_back(where + problem);
    if (b.bucket.bytes() != bucket || b.shard.bytes() != shard || b.params.bytes() != params)
      failures_.push_back(where + "a buffer was written by a refused call");
  }

 private:
  const collZeroPartition_t& p_;
  std::vector<std::string>& failures_;
};

constexpr const char* kRs = "collZeroReduceScatterRange";
constexpr const char* kRsg = "collZeroReduceScatterGradients";
constexpr const char* kAg = "collZeroAllGatherRange";
constexpr const char* kAgp = "collZeroAllGatherParameters";
constexpr const char* kAgi = "collZeroAllGatherRangeInPlace";

// Partition arguments, shared by all four functions: `call` runs a function with partition q.
void checkPartitionErrors(const char* function, const collZeroPartition_t& p, collComm_t comm,
                          const std::function<collResult_t(Buffers&, const collZeroPartition_t*, collComm_t)>& call,
                          std::vector<std::string>& failures) {
  BadCallChecker check(p, failures);
  const std::string fn = function;
  check.expect(fn + " NULL partition", {fn, "partition is NULL"}, [&](Buffers& b) { return call(b, nullptr, comm); });
  // A consistent partition, but made for the next rank (same size, so no buffer is too short).
  collZeroPartition_t other = p;
  other.rank = (p.rank + 1) % p.nranks;
  other.shardOffset = other.shardCount * size_t(other.rank);
  check.expect(fn + " partition of another rank", {fn, "rank " + std::to_string(other.rank) + " of 2"},
               [&](Buffers& b) { return call(b, &other, comm); });
  // Made for 4 ranks where the communicator has 2.
  collZeroPartition_t wider;
  collZeroPartitionInit(&wider, p.totalCount, 4, p.rank, 0);
  check.expect(fn + " partition for 4 ranks", {fn, "of 4"}, [&](Buffers& b) { return call(b, &wider, comm); });
  collZeroPartition_t tampered = p;
  tampered.shardOffset += 1;
  check.expect(fn + " inconsistent partition", {fn, "shardOffset " + std::to_string(tampered.shardOffset)},
               [&](Buffers& b) { return call(b, &tampered, comm); });
  tampered = p;
  tampered.paddedCount = p.totalCount - 1;
  check.expect(fn + " paddedCount below totalCount", {fn, "inconsistent"},
               [&](Buffers& b) { return call(b, &tampered, comm); });
  check.expect(fn + " NULL comm", {fn, "comm"}, [&](Buffers& b) { return call(b, &p, nullptr); });
}

std::vector<std::string> badArgumentsBody(collComm_t comm, int rank, int nranks) {
  std::vector<std::string> failures;
  collZeroPartition_t p;
  if (collZeroPartitionInit(&p, 100, nranks, rank, 0) != collSuccess) return {collGetLastError(nullptr)};
  const size_t P = p.paddedCount, S = p.shardCount;  // 128 and 64
  const size_t max = std::numeric_limits<size_t>::max();
  BadCallChecker check(p, failures);

  auto rs = [&](Buffers& b, size_t begin, size_t count, int accumulate, collDataType_t type, collRedOp_t op) {
    return collZeroReduceScatterRange(b.bucket.data(), begin, count, b.shard.data(), accumulate, type, op, &p, comm);
  };
  check.expect("rs op max", {kRs, "op 2"}, [&](Buffers& b) { return rs(b, 0, P, 0, collFloat32, collMax); });
  check.expect("rs op prod", {kRs, "op 1"}, [&](Buffers& b) { return rs(b, 0, 10, 0, collFloat32, collProd); });
  check.expect("rs int32", {kRs, "datatype 2"}, [&](Buffers& b) { return rs(b, 0, P, 0, collInt32, collSum); });
  check.expect("rs float64", {kRs, "datatype 8"}, [&](Buffers& b) { return rs(b, 0, 8, 0, collFloat64, collSum); });
  check.expect("rs accumulate 2", {kRs, "accumulate 2"},
               [&](Buffers& b) { return rs(b, 0, P, 2, collFloat32, collSum); });
  check.expect("rs accumulate -1", {kRs, "accumulate -1"},
               [&](Buffers& b) { return rs(b, 0, 5, -1, collFloat32, collAvg); });
  check.expect("rs past the end", {kRs, "begin " + std::to_string(P - 3), "count 4", std::to_string(P)},
               [&](Buffers& b) { return rs(b, P - 3, 4, 0, collFloat32, collSum); });
  check.expect("rs begin past the end", {kRs, "begin " + std::to_string(P + 1)},
               [&](Buffers& b) { return rs(b, P + 1, 0, 0, collFloat32, collSum); });
  check.expect("rs wrapping range", {kRs, "begin " + std::to_string(max - 1)},
               [&](Buffers& b) { return rs(b, max - 1, 4, 0, collFloat32, collSum); });
  check.expect("rs NULL bucket", {kRs, "bucket is NULL", "10"}, [&](Buffers& b) {
    return collZeroReduceScatterRange(nullptr, 3, 10, b.shard.data(), 0, collFloat32, collSum, &p, comm);
  });
  check.expect("rs NULL gradShard", {kRs, "gradShard is NULL", std::to_string(S)}, [&](Buffers& b) {
    return collZeroReduceScatterRange(b.bucket.data(), 3, 10, nullptr, 0, collFloat32, collSum, &p, comm);
  });
  checkPartitionErrors(
      kRs, p, comm,
      [&](Buffers& b, const collZeroPartition_t* q, collComm_t c) {
        return collZeroReduceScatterRange(b.bucket.data(), 0, P, b.shard.data(), 0, collFloat32, collSum, q, c);
      },
      failures);

  auto rsg = [&](Buffers& b, size_t bucketCount, int accumulate, collDataType_t type, collRedOp_t op) {
    return collZeroReduceScatterGradients(b.bucket.data(), b.shard.data(), bucketCount, accumulate, type, op, &p, comm);
  };
  check.expect("rsg op max", {kRsg, "op 2"}, [&](Buffers& b) { return rsg(b, 0, 0, collFloat32, collMax); });
  check.expect("rsg int32", {kRsg, "datatype 2"}, [&](Buffers& b) { return rsg(b, 10, 0, collInt32, collSum); });
  check.expect("rsg accumulate 2", {kRsg, "accumulate 2"},
               [&](Buffers& b) { return rsg(b, 0, 2, collFloat16, collSum); });
  check.expect("rsg NULL grads", {kRsg, "grads is NULL", std::to_string(P)}, [&](Buffers& b) {
    return collZeroReduceScatterGradients(nullptr, b.shard.data(), 0, 0, collFloat32, collSum, &p, comm);
  });
  check.expect("rsg NULL gradShard", {kRsg, "gradShard is NULL"}, [&](Buffers& b) {
    return collZeroReduceScatterGradients(b.bucket.data(), nullptr, 0, 0, collFloat32, collSum, &p, comm);
  });
  checkPartitionErrors(
      kRsg, p, comm,
      [&](Buffers& b, const collZeroPartition_t* q, collComm_t c) {
        return collZeroReduceScatterGradients(b.bucket.data(), b.shard.data(), 7, 1, collFloat32, collSum, q, c);
      },
      failures);

  auto ag = [&](Buffers& b, size_t begin, size_t count, collDataType_t type) {
    return collZeroAllGatherRange(b.shard.data(), begin, count, b.params.data(), type, &p, comm);
  };
  check.expect("ag past the end", {kAg, "begin 1", "count " + std::to_string(P)},
               [&](Buffers& b) { return ag(b, 1, P, collFloat32); });
  check.expect("ag wrapping range", {kAg, std::to_string(max)}, [&](Buffers& b) { return ag(b, 5, max, collFloat32); });
  check.expect("ag bad datatype", {kAg, "datatype 10"}, [&](Buffers& b) { return ag(b, 0, 8, collDataType_t(10)); });
  check.expect("ag NULL shard", {kAg, "shard is NULL"}, [&](Buffers& b) {
    return collZeroAllGatherRange(nullptr, 0, 8, b.params.data(), collFloat32, &p, comm);
  });
  check.expect("ag NULL out", {kAg, "out is NULL", "8"}, [&](Buffers& b) {
    return collZeroAllGatherRange(b.shard.data(), 0, 8, nullptr, collFloat32, &p, comm);
  });
  checkPartitionErrors(
      kAg, p, comm,
      [&](Buffers& b, const collZeroPartition_t* q, collComm_t c) {
        return collZeroAllGatherRange(b.shard.data(), 3, 50, b.params.data(), collFloat32, q, c);
      },
      failures);

  auto agi = [&](Buffers& b, size_t begin, size_t count, collDataType_t type) {
    return collZeroAllGatherRangeInPlace(begin, count, b.params.data(), type, &p, comm);
  };
  check.expect("agi past the end", {kAgi, "begin 2", "count " + std::to_string(P)},
               [&](Buffers& b) { return agi(b, 2, P, collFloat32); });
  check.expect("agi bad datatype", {kAgi, "datatype 10"}, [&](Buffers& b) { return agi(b, 0, 8, collDataType_t(10)); });
  check.expect("agi NULL out", {kAgi, "out is NULL", "8"},
               [&](Buffers& b) { return collZeroAllGatherRangeInPlace(0, 8, nullptr, collFloat32, &p, comm); });
  checkPartitionErrors(
      kAgi, p, comm,
      [&](Buffers& b, const collZeroPartition_t* q, collComm_t c) {
        return collZeroAllGatherRangeInPlace(3, 50, b.params.data(), collFloat32, q, c);
      },
      failures);

  check.expect("agp bad datatype", {kAgp, "datatype -1"}, [&](Buffers& b) {
    return collZeroAllGatherParameters(b.shard.data(), b.params.data(), 0, collDataType_t(-1), &p, comm);
  });
  check.expect("agp NULL shard", {kAgp, "shard is NULL"}, [&](Buffers& b) {
    return collZeroAllGatherParameters(nullptr, b.params.data(), 0, collFloat32, &p, comm);
  });
  check.expect("agp NULL params", {kAgp, "params is NULL", std::to_string(P)}, [&](Buffers& b) {
    return collZeroAllGatherParameters(b.shard.data(), nullptr, 16, collFloat32, &p, comm);
  });
  checkPartitionErrors(
      kAgp, p, comm,
      [&](Buffers& b, const collZeroPartition_t* q, collComm_t c) {
        return collZeroAllGatherParameters(b.shard.data(), b.params.data(), 0, collFloat32, q, c);
      },
      failures);

  // The communicator is still usable: one good gather together.
  Buffers b(p);
  if (collZeroAllGatherParameters(b.shard.data(), b.params.data(), 0, collFloat32, &p, comm) != collSuccess) {
    failures.push_back("good call after the refusals: " + std::string(collGetLastError(nullptr)));
  } else {
    for (size_t i = 0; i < P; ++i)
      if (b.params.get(i) != paramValue(collFloat32, i)) {
        failures.push_back("good call after the refusals: wrong value at " + std::to_string(i));
        break;
      }
  }
  return failures;
}

TEST(ZeroShardedCommErrors, BadArgumentsAreRefusedBeforeAnyWrite) {
  auto failures = colltest::runAsThreadsWithMemoryStore(2, badArgumentsBody);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// Zero counts need no buffers: an empty flat buffer, and empty ranges of a non-empty one.
std::vector<std::string> emptyCallsBody(collComm_t comm, int rank, int nranks) {
  std::vector<std::string> failures;
  auto expectOk = [&](const std::string& name, collResult_t rc) {
    if (rc != collSuccess)
      failures.push_back("rank " + std::to_string(rank) + ": " + name + ": " + collGetLastError(nullptr));
  };
  collZeroPartition_t empty;
  expectOk("init", collZeroPartitionInit(&empty, 0, nranks, rank, 0));
  for (collDataType_t type : {collFloat32, collFloat16, collBfloat16}) {
    expectOk("rs empty", collZeroReduceScatterRange(nullptr, 0, 0, nullptr, 0, type, collSum, &empty, comm));
    expectOk("rsg empty", collZeroReduceScatterGradients(nullptr, nullptr, 0, 1, type, collAvg, &empty, comm));
    expectOk("rsg empty bucketed", collZeroReduceScatterGradients(nullptr, nullptr, 5, 0, type, collSum, &empty, comm));
    expectOk("ag empty", collZeroAllGatherRange(nullptr, 0, 0, nullptr, type, &empty, comm));
    expectOk("agi empty", collZeroAllGatherRangeInPlace(0, 0, nullptr, type, &empty, comm));
    expectOk("agp empty", collZeroAllGatherParameters(nullptr, nullptr, 0, type, &empty, comm));
    expectOk("agp empty bucketed", collZeroAllGatherParameters(nullptr, nullptr, 3, type, &empty, comm));
  }
  collZeroPartition_t p;
  expectOk("init", collZeroPartitionInit(&p, 50, nranks, rank, 1));
  TypedBuffer shard(collFloat16, p.shardCount);
  const auto before = shard.bytes();
  for (size_t begin : {size_t(0), p.shardCount / 2, p.paddedCount}) {
    expectOk("rs empty range",
             collZeroReduceScatterRange(nullptr, begin, 0, shard.data(), 1, collFloat16, collSum, &p, comm));
    expectOk("ag empty range", collZeroAllGatherRange(shard.data(), begin, 0, nullptr, collFloat16, &p, comm));
    expectOk("agi empty range", collZeroAllGatherRangeInPlace(begin, 0, nullptr, collFloat16, &p, comm));
  }
  if (shard.bytes() != before) failures.push_back("rank " + std::to_string(rank) + ": an empty range wrote gradShard");
  return failures;
}

TEST(ZeroShardedCommErrors, ZeroCountsAcceptNullBuffers) {
  for (int nranks : {1, 2, 3}) {
    auto failures = colltest::runAsThreadsWithMemoryStore(nranks, emptyCallsBody);
    EXPECT_TRUE(failures.empty()) << nranks << " ranks:\n" << joinFailures(failures);
  }
}

}  // namespace
}  // namespace zerotest
