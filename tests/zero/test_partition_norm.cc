// collZeroPartitionInit against the padding formulas recomputed here, its refusals, and
// collZeroSquaredNorm against a double-precision sum with its non-finite flag.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "zero_test_util.h"

namespace zerotest {
namespace {

// The smallest multiple of nranks * align that holds total, written differently from the library.
size_t expectedPadded(size_t total, size_t nranks, size_t align) {
  const size_t unit = nranks * align;
  const size_t rest = total % unit;
  return rest == 0 ? total : total + (unit - rest);
}

TEST(ZeroPartition, PaddingAlignmentAndOffsetsFollowTheFormulas) {
  const size_t totals[] = {0, 1, 2, 3, 15, 16, 17, 31, 63, 64, 65, 100, 511, 1000, 1023, 1025, 123457, 1u << 20};
  const int nranksList[] = {1, 2, 3, 4, 5, 7, 8, 13, 64};
  const size_t aligns[] = {0, 1, 2, 3, 7, 16, 64, 1000};
  for (size_t total : totals) {
    for (int nranks : nranksList) {
      for (size_t alignArg : aligns) {
        const size_t align = alignArg == 0 ? 16 : alignArg;
        const size_t padded = expectedPadded(total, size_t(nranks), align);
        for (int rank : {0, nranks / 2, nranks - 1}) {
          SCOPED_TRACE("total " + std::to_string(total) + " nranks " + std::to_string(nranks) + " rank " +
                       std::to_string(rank) + " align " + std::to_string(alignArg));
          collZeroPartition_t p;
          std::memset(&p, 0x5c, sizeof p);
          ASSERT_EQ(collZeroPartitionInit(&p, total, nranks, rank, alignArg), collSuccess) << collGetLastError(nullptr);
          EXPECT_EQ(p.totalCount, total);
          EXPECT_EQ(p.paddedCount, padded);
          EXPECT_GE(p.paddedCount, total);
          EXPECT_LT(p.paddedCount - total, size_t(nranks) * align);
          EXPECT_EQ(p.shardCount, padded / size_t(nranks));
          EXPECT_EQ(p.shardCount * size_t(nranks), p.paddedCount);
          EXPECT_EQ(p.shardCount % align, 0u);
          EXPECT_EQ(p.shardOffset, size_t(rank) * p.shardCount);
          EXPECT_EQ(p.nranks, nranks);
          EXPECT_EQ(p.rank, rank);
        }
      }
    }
  }
}

TEST(ZeroPartition, SpotValues) {
  collZeroPartition_t p;
  ASSERT_EQ(collZeroPartitionInit(&p, 0, 4, 3, 0), collSuccess);
  EXPECT_EQ(p.paddedCount, 0u);
  EXPECT_EQ(p.shardCount, 0u);
  EXPECT_EQ(p.shardOffset, 0u);
  ASSERT_EQ(collZeroPartitionInit(&p, 1, 4, 2, 0), collSuccess);  // default alignment: 16 per shard
  EXPECT_EQ(p.paddedCount, 64u);
  EXPECT_EQ(p.shardCount, 16u);
  EXPECT_EQ(p.shardOffset, 32u);
  ASSERT_EQ(collZeroPartitionInit(&p, 37, 3, 1, 1), collSuccess);
  EXPECT_EQ(p.paddedCount, 39u);
  EXPECT_EQ(p.shardCount, 13u);
  EXPECT_EQ(p.shardOffset, 13u);
  ASSERT_EQ(collZeroPartitionInit(&p, 100, 3, 2, 5), collSuccess);  // units of 15
  EXPECT_EQ(p.paddedCount, 105u);
  EXPECT_EQ(p.shardCount, 35u);
  EXPECT_EQ(p.shardOffset, 70u);
  // The largest total that still pads without overflow: SIZE_MAX - 64 rounds up to 2^64 - 64.
  const size_t max = std::numeric_limits<size_t>::max();
  ASSERT_EQ(collZeroPartitionInit(&p, max - 64, 4, 3, 0), collSuccess) << collGetLastError(nullptr);
  EXPECT_EQ(p.paddedCount, max - 63);
  EXPECT_EQ(p.shardCount, (max - 63) / 4);
  EXPECT_EQ(p.shardOffset, 3 * ((max - 63) / 4));
}

// Each bad call must fail with a message naming the function and the value, and leave *p alone.
void expectRefused(size_t total, int nranks, int rank, size_t align, std::initializer_list<std::string> pieces) {
  SCOPED_TRACE("total " + std::to_string(total) + " nranks " + std::to_string(nranks) + " rank " +
               std::to_string(rank) + " align " + std::to_string(align));
  collZeroPartition_t p, before;
  std::memset(&p, 0x5c, sizeof p);
  before = p;
  const collResult_t rc = collZeroPartitionInit(&p, total, nranks, rank, align);
  std::vector<std::string> all = {"collZeroPartitionInit"};
  all.insert(all.end(), pieces.begin(), pieces.end());
  std::string problem;
  for (const auto& piece : all) {
    problem = invalidArgumentProblem(rc, {piece});
    if (!problem.empty()) break;
  }
  EXPECT_EQ(problem, "");
  EXPECT_EQ(std::memcmp(&p, &before, sizeof p), 0) << "the partition was written on error";
}

TEST(ZeroPartition, RefusesBadArguments) {
  EXPECT_EQ(invalidArgumentProblem(collZeroPartitionInit(nullptr, 10, 2, 0, 0), {"collZeroPartitionInit", "NULL"}), "");
  expectRefused(10, 0, 0, 0, {"nranks 0"});
  expectRefused(10, -3, 0, 0, {"nranks -3"});
  expectRefused(10, 2, -1, 0, {"rank -1"});
  expectRefused(10, 2, 2, 0, {"rank 2"});
  expectRefused(10, 1, 5, 16, {"rank 5"});
  const size_t max = std::numeric_limits<size_t>::max();
  expectRefused(max, 4, 0, 0, {"overflow", std::to_string(max)});
  expectRefused(max - 10, 4, 1, 16, {"overflow", std::to_string(max - 10)});
  expectRefused(10, 4, 0, max / 2, {"overflow", std::to_string(max / 2)});  // nranks * align overflows
  expectRefused(10, 2, 0, max, {"overflow"});
}

// ---- collZeroSquaredNorm ----

double normInput(size_t i) { return (double(int((i * 37 + 11) % 201)) - 100.0) / 16.0; }

TEST(ZeroSquaredNorm, MatchesDoubleReference) {
  for (collDataType_t type : {collFloat32, collFloat16, collBfloat16}) {
    for (size_t count :
         {size_t(0), size_t(1), size_t(7), size_t(511), size_t(512), size_t(513), size_t(1037), size_t(100003)}) {
      SCOPED_TRACE(std::string(typeName(type)) + " count " + std::to_string(count));
      TypedBuffer data(type, count);
      double want = 0.0;
      for (size_t i = 0; i < count; ++i) {
        data.set(i, normInput(i) * (1.0 + double(i % 3) / 1024.0));
        want += data.get(i) * data.get(i);  // the value the type holds, squared in double
      }
      const std::vector<unsigned char> before = data.bytes();
      double sum = -1.0;
      int nonFinite = -1;
      ASSERT_EQ(collZeroSquaredNorm(data.data(), type, count, &sum, &nonFinite), collSuccess)
          << collGetLastError(nullptr);
      EXPECT_NEAR(sum, want, 1e-6 * want);
      EXPECT_EQ(nonFinite, 0);
      EXPECT_EQ(data.bytes(), before) << "the data was written";
    }
  }
}

TEST(ZeroSquaredNorm, ZeroCountAcceptsNullData) {
  double sum = -1.0;
  int nonFinite = -1;
  ASSERT_EQ(collZeroSquaredNorm(nullptr, collFloat16, 0, &sum, &nonFinite), collSuccess) << collGetLastError(nullptr);
  EXPECT_EQ(sum, 0.0);
  EXPECT_EQ(nonFinite, 0);
}

TEST(ZeroSquaredNorm, FlagsInfinityAndNaNInAnyBlock) {
  for (collDataType_t type : {collFloat32, collFloat16, collBfloat16}) {
    for (double bad : {double(INFINITY), -double(INFINITY), double(NAN)}) {
      for (size_t where : {size_t(0), size_t(511), size_t(512), size_t(1036)}) {
        SCOPED_TRACE(std::string(typeName(type)) + " " + std::to_string(bad) + " at " + std::to_string(where));
        TypedBuffer data(type, 1037);
        for (size_t i = 0; i < data.count(); ++i) data.set(i, normInput(i));
        data.set(where, bad);
        double sum = 0.0;
        int nonFinite = 0;
        ASSERT_EQ(collZeroSquaredNorm(data.data(), type, data.count(), &sum, &nonFinite), collSuccess);
        EXPECT_EQ(nonFinite, 1);
        EXPECT_FALSE(std::isfinite(sum));
      }
    }
  }
}

// fp16 overflow is what the flag is for: 70000 does not fit in half and becomes Inf on store.
TEST(ZeroSquaredNorm, FlagsHalfOverflow) {
  TypedBuffer data(collFloat16, 3);
  data.set(0, 1.0);
  data.set(1, 70000.0);
  data.set(2, 1.0);
  double sum = 0.0;
  int nonFinite = 0;
  ASSERT_EQ(collZeroSquaredNorm(data.data(), collFloat16, 3, &sum, &nonFinite), collSuccess);
  EXPECT_EQ(nonFinite, 1);
}

// Finite elements whose squares leave float's range still have a finite sum of squares in double.
TEST(ZeroSquaredNorm, LargeFiniteElementsAreNotFlagged) {
  for (collDataType_t type : {collFloat32, collBfloat16}) {
    SCOPED_TRACE(typeName(type));
    TypedBuffer data(type, 600);
    double want = 0.0;
    for (size_t i = 0; i < data.count(); ++i) {
      data.set(i, (i % 2 ? 1e20 : -3e19) * double(1 + i % 5));
      want += data.get(i) * data.get(i);
    }
    double sum = 0.0;
    int nonFinite = -1;
    ASSERT_EQ(collZeroSquaredNorm(data.data(), type, data.count(), &sum, &nonFinite), collSuccess);
    EXPECT_EQ(nonFinite, 0);
    EXPECT_NEAR(sum, want, 1e-6 * want);
  }
}

TEST(ZeroSquaredNorm, RefusesBadArguments) {
  float data[4] = {1, 2, 3, 4};
  double sum = 7.0;
  int nonFinite = 7;
  EXPECT_EQ(invalidArgumentProblem(collZeroSquaredNorm(data, collInt32, 4, &sum, &nonFinite),
                                   {"collZeroSquaredNorm", "datatype 2"}),
            "");
  EXPECT_EQ(invalidArgumentProblem(collZeroSquaredNorm(data, collFloat64, 4, &sum, &nonFinite),
                                   {"collZeroSquaredNorm", "datatype 8"}),
            "");
  EXPECT_EQ(invalidArgumentProblem(collZeroSquaredNorm(nullptr, collFloat32, 4, &sum, &nonFinite),
                                   {"collZeroSquaredNorm", "data is NULL", "4"}),
            "");
  EXPECT_EQ(invalidArgumentProblem(collZeroSquaredNorm(data, collFloat32, 4, nullptr, &nonFinite),
                                   {"collZeroSquaredNorm", "sumOfSquares"}),
            "");
  EXPECT_EQ(invalidArgumentProblem(collZeroSquaredNorm(data, collFloat32, 4, &sum, nullptr),
                                   {"collZeroSquaredNorm", "nonFinite"}),
            "");
  EXPECT_EQ(sum, 7.0);
  EXPECT_EQ(nonFinite, 7);
}

}  // namespace
}  // namespace zerotest
