// collZeroReduceScatter{Range,Gradients} and collZeroAllGather{Range,Parameters} on 1..4 ranks
// (threads sharing an in-memory store, and processes), for every layout x range x bucket size x
// type x op x accumulate, against references computed here: each rank knows every rank's input
// as a formula of (rank, flat index). Outputs start poisoned; whatever a call must not write
// (gradShard outside the range, the bucket parts other ranks own, the guard after every buffer,
// the shard being gathered) is compared byte for byte with what it held before.
#include <gtest/gtest.h>

#include "rank_launcher.h"
#include "sharded_cases.h"

namespace zerotest {
namespace {

using colltest::joinFailures;

const collDataType_t kReduceTypes[] = {collFloat32, collFloat16, collBfloat16};
const collDataType_t kGatherTypes[] = {collFloat32, collFloat16, collBfloat16, collInt32, collInt8, collFloat64};
const collRedOp_t kOps[] = {collSum, collAvg};

// A rank's failures, capped so that a broken build reports readably.
class Failures {
 public:
  void add(const std::string& failure) {
    if (list_.size() < 20) list_.push_back(failure);
  }
  std::vector<std::string> take() { return std::move(list_); }

 private:
  std::vector<std::string> list_;
};

std::string rangeText(size_t begin, size_t count) {
  return " [" + std::to_string(begin) + ", +" + std::to_string(count) + ")";
}

std::string reduceText(collRedOp_t op, int accumulate) {
  return std::string(op == collSum ? " sum" : " avg") + " accumulate " + std::to_string(accumulate);
}

// gradShard after a reduction of flat [lo, hi): inside, the prior contents (accumulate) plus the
// reduced gradients; outside, what it held before.
void checkGradShard(const TypedBuffer& shard, const std::vector<unsigned char>& before, const collZeroPartition_t& p,
                    collDataType_t type, collRedOp_t op, int accumulate, size_t lo, size_t hi, const std::string& what,
                    Failures& f) {
  for (size_t j = 0; j < p.shardCount; ++j) {
    const size_t flat = p.shardOffset + j;
    if (flat >= lo && flat < hi) {
      const double want = (accumulate ? loadValue(before.data(), j, type) : 0.0) + reducedGrad(p.nranks, flat, op);
      const double tolerance = op == collAvg ? 2 * epsilonOf(type) * (1 + std::fabs(want)) : 0.0;
      const double got = shard.get(j);
      if (!(std::fabs(got - want) <= tolerance))
        f.add(what + ": gradShard[" + std::to_string(j) + "] = " + std::to_string(got) + ", expected " +
              std::to_string(want));
    } else if (!shard.sameElement(before, j)) {
      f.add(what + ": gradShard[" + std::to_string(j) + "] (flat " + std::to_string(flat) +
            ") is outside the range but was written");
    }
  }
  if (!shard.guardIntact()) f.add(what + ": written past the end of gradShard");
}

// Elements of a gradient buffer holding flat [first, first + count) that other ranks own must be
// left alone (this rank's part is scratch).
void checkOthersPartsKept(const TypedBuffer& grads, const std::vector<unsigned char>& before, size_t first,
                          const collZeroPartition_t& p, const std::string& what, Failures& f) {
  for (size_t k = 0; k < grads.count(); ++k) {
    const size_t flat = first + k;
    const bool mine = flat >= p.shardOffset && flat < p.shardOffset + p.shardCount;
    if (!mine && !grads.sameElement(before, k)) {
      f.add(what + ": element " + std::to_string(k) + " (flat " + std::to_string(flat) +
            ", owned by another rank) of the input was written");
      return;
    }
  }
  if (!grads.guardIntact()) f.add(what + ": written past the end of the input");
}

TypedBuffer gradShardFor(const collZeroPartition_t& p, collDataType_t type, int accumulate) {
  TypedBuffer shard(type, p.shardCount);
  if (accumulate)
    for (size_t j = 0; j < p.shardCount; ++j) shard.set(j, priorValue(p.rank, j));
  return shard;
}

void checkReduceScatterRange(collComm_t comm, const collZeroPartition_t& p, collDataType_t type, collRedOp_t op,
                             int accumulate, Range r, Failures& f) {
  TypedBuffer bucket(type, r.count);
  for (size_t k = 0; k < r.count; ++k) bucket.set(k, gradValue(p.rank, r.begin + k));
  TypedBuffer shard = gradShardFor(p, type, accumulate);
  const std::vector<unsigned char> bucketBefore = bucket.bytes(), shardBefore = shard.bytes();
  const std::string what = describe("collZeroReduceScatterRange", p.rank, p, type) + reduceText(op, accumulate) +
                           rangeText(r.begin, r.count);
  if (collZeroReduceScatterRange(bucket.data(), r.begin, r.count, shard.data(), accumulate, type, op, &p, comm) !=
      collSuccess) {
    f.add(what + ": " + collGetLastError(nullptr));
    return;
  }
  checkGradShard(shard, shardBefore, p, type, op, accumulate, r.begin, r.begin + r.count, what, f);
  checkOthersPartsKept(bucket, bucketBefore, r.begin, p, what, f);
}

void checkReduceScatterGradients(collComm_t comm, const collZeroPartition_t& p, collDataType_t type, collRedOp_t op,
                                 int accumulate, size_t bucketCount, Failures& f) {
  TypedBuffer grads(type, p.paddedCount);
  for (size_t i = 0; i < p.paddedCount; ++i) grads.set(i, gradValue(p.rank, i));
  TypedBuffer shard = gradShardFor(p, type, accumulate);
  const std::vector<unsigned char> gradsBefore = grads.bytes(), shardBefore = shard.bytes();
  const std::string what = describe("collZeroReduceScatterGradients", p.rank, p, type) + reduceText(op, accumulate) +
                           " bucketCount " + std::to_string(bucketCount);
  if (collZeroReduceScatterGradients(grads.data(), shard.data(), bucketCount, accumulate, type, op, &p, comm) !=
      collSuccess) {
    f.add(what + ": " + collGetLastError(nullptr));
    return;
  }
  checkGradShard(shard, shardBefore, p, type, op, accumulate, 0, p.paddedCount, what, f);
  checkOthersPartsKept(grads, gradsBefore, 0, p, what, f);
}

// This rank's shard of the parameters, as paramValue defines them.
void fillShard(TypedBuffer& buffer, size_t at, const collZeroPartition_t& p, collDataType_t type) {
  for (size_t j = 0; j < p.shardCount; ++j) buffer.set(at + j, paramValue(type, p.shardOffset + j));
}

void checkGathered(const TypedBuffer& out, size_t first, collDataType_t type, const std::string& what, Failures& f) {
  for (size_t k = 0; k < out.count(); ++k) {
    const double want = paramValue(type, first + k), got = out.get(k);
    if (got != want) {
      f.add(what + ": out[" + std::to_string(k) + "] = " + std::to_string(got) + ", expected " + std::to_string(want));
      return;
    }
  }
  if (!out.guardIntact()) f.add(what + ": written past the end of the output");
}

void checkAllGatherRange(collComm_t comm, const collZeroPartition_t& p, collDataType_t type, Range r, Failures& f) {
  TypedBuffer shard(type, p.shardCount);
  fillShard(shard, 0, p, type);
  TypedBuffer out(type, r.count);
  const std::vector<unsigned char> shardBefore = shard.bytes();
  const std::string what = describe("collZeroAllGatherRange", p.rank, p, type) + rangeText(r.begin, r.count);
  if (collZeroAllGatherRange(shard.data(), r.begin, r.count, out.data(), type, &p, comm) != collSuccess) {
    f.add(what + ": " + collGetLastError(nullptr));
    return;
  }
  checkGathered(out, r.begin, type, what, f);
  if (shard.bytes() != shardBefore) f.add(what + ": the shard was written");
}

// This rank's piece of the range is put in place first; the rest of out is poisoned.
void checkAllGatherRangeInPlace(collComm_t comm, const collZeroPartition_t& p, collDataType_t type, Range r,
                                Failures& f) {
  TypedBuffer out(type, r.count);
  for (size_t k = 0; k < r.count; ++k) out.set(k, -1.0e4);
  const size_t lo = std::max(r.begin, p.shardOffset), hi = std::min(r.begin + r.count, p.shardOffset + p.shardCount);
  for (size_t i = lo; i < hi; ++i) out.set(i - r.begin, paramValue(type, i));
  const std::string what = describe("collZeroAllGatherRangeInPlace", p.rank, p, type) + rangeText(r.begin, r.count);
  if (collZeroAllGatherRangeInPlace(r.begin, r.count, out.data(), type, &p, comm) != collSuccess) {
    f.add(what + ": " + collGetLastError(nullptr));
    return;
  }
  checkGathered(out, r.begin, type, what, f);
}

void checkAllGatherParameters(collComm_t comm, const collZeroPartition_t& p, collDataType_t type, size_t bucketCount,
                              bool inPlace, Failures& f) {
  TypedBuffer params(type, p.paddedCount);
  TypedBuffer separate(type, inPlace ? 0 : p.shardCount);
  if (inPlace) {
    fillShard(params, p.shardOffset, p, type);
  } else {
    fillShard(separate, 0, p, type);
  }
  const void* shard = inPlace ? params.at(p.shardOffset) : separate.data();
  const std::vector<unsigned char> separateBefore = separate.bytes();
  const std::string what = describe("collZeroAllGatherParameters", p.rank, p, type) + " bucketCount " +
                           std::to_string(bucketCount) + (inPlace ? " in place" : "");
  if (collZeroAllGatherParameters(shard, params.data(), bucketCount, type, &p, comm) != collSuccess) {
    f.add(what + ": " + collGetLastError(nullptr));
    return;
  }
  checkGathered(params, 0, type, what, f);
  if (separate.bytes() != separateBefore) f.add(what + ": the shard was written");
}

// Runs `each(partition)` for every layout on this rank; every rank walks the same list.
template <typename Each>
std::vector<std::string> forEachLayout(const std::vector<Layout>& layouts, int rank, int nranks, Each&& each) {
  Failures f;
  for (const Layout& l : layouts) {
    collZeroPartition_t p;
    if (collZeroPartitionInit(&p, l.total, nranks, rank, l.align) != collSuccess)
      return {"collZeroPartitionInit: " + std::string(collGetLastError(nullptr))};
    each(p, f);
  }
  return f.take();
}

colltest::RankBody reduceScatterRangeBody(std::vector<Layout> layouts) {
  return [layouts](collComm_t comm, int rank, int nranks) {
    return forEachLayout(layouts, rank, nranks, [&](const collZeroPartition_t& p, Failures& f) {
      for (collDataType_t type : kReduceTypes)
        for (collRedOp_t op : kOps)
          for (int accumulate : {0, 1})
            for (const Range& r : rangesOf(p)) checkReduceScatterRange(comm, p, type, op, accumulate, r, f);
    });
  };
}

colltest::RankBody reduceScatterGradientsBody(std::vector<Layout> layouts) {
  return [layouts](collComm_t comm, int rank, int nranks) {
    return forEachLayout(layouts, rank, nranks, [&](const collZeroPartition_t& p, Failures& f) {
      for (collDataType_t type : kReduceTypes)
        for (collRedOp_t op : kOps)
          for (int accumulate : {0, 1})
            for (size_t bucketCount : bucketCountsOf(p))
              checkReduceScatterGradients(comm, p, type, op, accumulate, bucketCount, f);
    });
  };
}

colltest::RankBody allGatherBody(std::vector<Layout> layouts) {
  return [layouts](collComm_t comm, int rank, int nranks) {
    return forEachLayout(layouts, rank, nranks, [&](const collZeroPartition_t& p, Failures& f) {
      for (collDataType_t type : kGatherTypes) {
        for (const Range& r : rangesOf(p)) {
          checkAllGatherRange(comm, p, type, r, f);
          checkAllGatherRangeInPlace(comm, p, type, r, f);
        }
        for (size_t bucketCount : bucketCountsOf(p))
          for (bool inPlace : {false, true}) checkAllGatherParameters(comm, p, type, bucketCount, inPlace, f);
      }
    });
  };
}

// Two micro-batches reduced bucket by bucket in backward order (last bucket first, buckets not
// aligned to shards), the second accumulating onto the first, then the parameters gathered in
// place: one training step's communication.
colltest::RankBody trainingStepBody(Layout layout, size_t bucketCount) {
  return [=](collComm_t comm, int rank, int nranks) {
    return forEachLayout({layout}, rank, nranks, [&](const collZeroPartition_t& p, Failures& f) {
      const collDataType_t type = collBfloat16;
      TypedBuffer shard(type, p.shardCount);
      for (int micro = 0; micro < 2; ++micro) {
        for (size_t end = p.paddedCount; end > 0;) {
          const size_t begin = end > bucketCount ? end - bucketCount : 0;
          TypedBuffer bucket(type, end - begin);
          for (size_t k = 0; k < bucket.count(); ++k) bucket.set(k, gradValue(rank + 5 * micro, begin + k));
          if (collZeroReduceScatterRange(bucket.data(), begin, end - begin, shard.data(), micro, type, collSum, &p,
                                         comm) != collSuccess)
            f.add("training step: " + std::string(collGetLastError(nullptr)));
          end = begin;
        }
      }
      for (size_t j = 0; j < p.shardCount; ++j) {
        double want = 0.0;
        for (int r = 0; r < nranks; ++r) want += gradValue(r, p.shardOffset + j) + gradValue(r + 5, p.shardOffset + j);
        if (shard.get(j) != want) {
          f.add(describe("training step", rank, p, type) + ": gradShard[" + std::to_string(j) +
                "] = " + std::to_string(shard.get(j)) + ", expected " + std::to_string(want));
          break;
        }
      }
      checkAllGatherParameters(comm, p, type, bucketCount, true, f);
    });
  };
}

class ZeroShardedComm : public ::testing::TestWithParam<int> {};

TEST_P(ZeroShardedComm, ReduceScatterRangeMatchesReference) {
  auto failures = colltest::runAsThreadsWithMemoryStore(GetParam(), reduceScatterRangeBody(standardLayouts()));
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST_P(ZeroShardedComm, ReduceScatterGradientsMatchesReference) {
  auto failures = colltest::runAsThreadsWithMemoryStore(GetParam(), reduceScatterGradientsBody(standardLayouts()));
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST_P(ZeroShardedComm, AllGatherMatchesConcatenatedShards) {
  auto failures = colltest::runAsThreadsWithMemoryStore(GetParam(), allGatherBody(standardLayouts()));
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST_P(ZeroShardedComm, TrainingStepInBackwardBuckets) {
  auto failures = colltest::runAsThreadsWithMemoryStore(GetParam(), trainingStepBody({517, 3}, 61));
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// Large enough for the bandwidth algorithms (rings, direct reads) under the whole-buffer calls.
TEST_P(ZeroShardedComm, LargeBufferMatchesReference) {
  const std::vector<Layout> large = {{200003, 1}};
  auto body = [&](collComm_t comm, int rank, int nranks) {
    return forEachLayout(large, rank, nranks, [&](const collZeroPartition_t& p, Failures& f) {
      const Range ranges[] = {{0, p.paddedCount}, {p.shardCount / 2, p.paddedCount - p.shardCount}};
      for (collDataType_t type : kReduceTypes) {
        for (int accumulate : {0, 1})
          for (const Range& r : ranges) checkReduceScatterRange(comm, p, type, collAvg, accumulate, r, f);
        checkReduceScatterGradients(comm, p, type, collSum, 1, p.shardCount / 3 + 1, f);
        checkAllGatherRange(comm, p, type, ranges[1], f);
        for (const Range& r : ranges) checkAllGatherRangeInPlace(comm, p, type, r, f);
        checkAllGatherParameters(comm, p, type, 0, true, f);
        checkAllGatherParameters(comm, p, type, p.shardCount / 3 + 1, false, f);
      }
    });
  };
  auto failures = colltest::runAsThreadsWithMemoryStore(GetParam(), body);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

std::string rankCountName(const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param) + "ranks"; }

INSTANTIATE_TEST_SUITE_P(Ranks, ZeroShardedComm, ::testing::Values(1, 2, 3, 4), rankCountName);

// Ranks as processes (shared memory between address spaces): a subset of the cases on 3 ranks.
TEST(ZeroShardedCommAsProcesses, ReduceAndGatherMatchReference) {
  const std::vector<Layout> layouts = {{37, 1}, {100, 0}};
  auto body = [&](collComm_t comm, int rank, int nranks) {
    std::vector<std::string> failures = reduceScatterRangeBody(layouts)(comm, rank, nranks);
    for (const auto& more : {reduceScatterGradientsBody(layouts), allGatherBody(layouts)}) {
      auto extra = more(comm, rank, nranks);
      failures.insert(failures.end(), extra.begin(), extra.end());
    }
    return failures;
  };
  auto failures = colltest::runAsProcesses(3, body);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace zerotest
