// Specific promises of reduceCopy that random inputs rarely reach: half and bfloat16 round once
// per result (not once per source), NaN propagation, overflow to infinity, and the integer avg
// division at the edges of each type; for every instruction-set variant.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/half.h"
#include "kernels/cpu/host_kernels.h"
#include "kernels/cpu/reduce.h"
#include "tests/kernels/host_variants.h"

namespace coll {
namespace kernels {
namespace {

class ReduceSemanticsTest : public testing::HostVariantTest {
 protected:
  // dst[i] = reduce over srcs[s][i], one destination, out of place, with this test's variant.
  template <typename T>
  std::vector<T> reduceColumns(collDataType_t type, collRedOp_t op, const std::vector<std::vector<T>>& srcs,
                               int divisor = 0) const {
    std::vector<const void*> ptrs;
    for (const auto& s : srcs) ptrs.push_back(s.data());
    std::vector<T> out(srcs[0].size());
    void* dst = out.data();
    reduceCopyWith(kernels(), type, op, ptrs.data(), int(ptrs.size()), &dst, 1, out.size(), divisor);
    return out;
  }

  template <typename T>
  void expectNanPropagates(collDataType_t type, T (*fromFloat)(float), bool (*isNan)(T)) const;
  template <typename T>
  void expectIntegerAvg(collDataType_t type) const;
};

// Each result is rounded once from the float combination; rounding after every source would give
// 1.0 here, because each 2^-11 alone is a tie that rounds back down to 1.0.
TEST_P(ReduceSemanticsTest, HalfRoundsOncePerResult) {
  // Repeated so that the vector body and the scalar-sized tail both see the case.
  const size_t n = 37;
  const std::vector<std::vector<uint16_t>> srcs = {std::vector<uint16_t>(n, floatToHalf(1.0f)),
                                                   std::vector<uint16_t>(n, floatToHalf(0x1p-11f)),
                                                   std::vector<uint16_t>(n, floatToHalf(0x1p-11f))};
  for (uint16_t v : reduceColumns(collFloat16, collSum, srcs)) EXPECT_EQ(v, 0x3c01);  // 1 + 2^-10
  // Avg: (1 + 2^-11 + 2^-11) / 3 is rounded once, from float.
  const uint16_t avg = floatToHalf((1.0f + 0x1p-11f + 0x1p-11f) / 3.0f);
  for (uint16_t v : reduceColumns(collFloat16, collAvg, srcs, 3)) EXPECT_EQ(v, avg);
}

TEST_P(ReduceSemanticsTest, Bfloat16RoundsOncePerResult) {
  const size_t n = 37;
  const std::vector<std::vector<uint16_t>> srcs = {std::vector<uint16_t>(n, floatToBfloat16(1.0f)),
                                                   std::vector<uint16_t>(n, floatToBfloat16(0x1p-8f)),
                                                   std::vector<uint16_t>(n, floatToBfloat16(0x1p-8f))};
  for (uint16_t v : reduceColumns(collBfloat16, collSum, srcs)) EXPECT_EQ(v, 0x3f81);  // 1 + 2^-7
}

TEST_P(ReduceSemanticsTest, SixteenBitOverflowRoundsToInfinity) {
  const size_t n = 19;
  const std::vector<std::vector<uint16_t>> halves = {std::vector<uint16_t>(n, floatToHalf(60000.0f)),
                                                     std::vector<uint16_t>(n, floatToHalf(60000.0f))};
  for (uint16_t v : reduceColumns(collFloat16, collSum, halves)) EXPECT_EQ(v, 0x7c00);
  // 120000 / 2 fits again: the division happens in float before the single rounding.
  for (uint16_t v : reduceColumns(collFloat16, collAvg, halves, 2)) EXPECT_EQ(v, floatToHalf(60000.0f));
  const std::vector<std::vector<uint16_t>> bf = {std::vector<uint16_t>(n, 0x7f7f), std::vector<uint16_t>(n, 0x7f7f)};
  for (uint16_t v : reduceColumns(collBfloat16, collSum, bf)) EXPECT_EQ(v, 0x7f80);
}

// NaN in either position, and inf - inf, give NaN for every op on every floating type.
template <typename T>
void ReduceSemanticsTest::expectNanPropagates(collDataType_t type, T (*fromFloat)(float), bool (*isNan)(T)) const {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // Column k: {a[k], b[k]}; 21 columns so that the tail path runs too.
  std::vector<float> a = {nan, 1.0f, nan, inf, -inf, 2.0f, 0.0f};
  std::vector<float> b = {1.0f, nan, nan, -inf, inf, nan, nan};
  const size_t pattern = a.size();
  for (int rep = 0; rep < 2; ++rep) {
    for (size_t k = 0; k < pattern; ++k) {
      a.push_back(a[k]);
      b.push_back(b[k]);
    }
  }
  std::vector<std::vector<T>> srcs(2);
  for (size_t k = 0; k < a.size(); ++k) {
    srcs[0].push_back(fromFloat(a[k]));
    srcs[1].push_back(fromFloat(b[k]));
  }
  for (collRedOp_t op : {collSum, collProd, collMax, collMin, collAvg}) {
    const std::vector<T> out = reduceColumns(type, op, srcs, 2);
    for (size_t k = 0; k < out.size(); ++k) {
      const size_t col = k % pattern;
      const bool infinities = col == 3 || col == 4;  // inf - inf is NaN only for sum and avg
      const bool wantNan = !infinities || op == collSum || op == collAvg;
      EXPECT_EQ(isNan(out[k]), wantNan) << dataTypeName(type) << " " << redOpName(op) << " column " << k;
    }
  }
}

TEST_P(ReduceSemanticsTest, NanPropagatesThroughEveryOp) {
  expectNanPropagates<uint16_t>(
      collFloat16, floatToHalf, [](uint16_t h) { return std::isnan(halfToFloat(h)); });
  expectNanPropagates<uint16_t>(
      collBfloat16, floatToBfloat16, [](uint16_t h) { return std::isnan(bfloat16ToFloat(h)); });
  expectNanPropagates<float>(
      collFloat32, [](float f) { return f; }, [](float f) { return std::isnan(f); });
  expectNanPropagates<double>(
      collFloat64, [](float f) { return double(f); }, [](double d) { return std::isnan(d); });
}

TEST_P(ReduceSemanticsTest, MaxMinOfSignedZerosAndInfinities) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::vector<float>> srcs = {{-inf, inf, 1.0f, -0.0f}, {inf, -inf, -1.0f, 0.0f}};
  const std::vector<float> mx = reduceColumns(collFloat32, collMax, srcs);
  const std::vector<float> mn = reduceColumns(collFloat32, collMin, srcs);
  EXPECT_EQ(mx[0], inf);
  EXPECT_EQ(mx[1], inf);
  EXPECT_EQ(mx[2], 1.0f);
  EXPECT_EQ(mn[0], -inf);
  EXPECT_EQ(mn[1], -inf);
  EXPECT_EQ(mn[2], -1.0f);
  // Equal operands: the earlier source wins, so the sign of zero is the first source's.
  EXPECT_TRUE(std::signbit(mx[3]));
  EXPECT_TRUE(std::signbit(mn[3]));
}

// C division of the wrapped sum, including near the limits of each type and for divisors the
// type cannot hold.
template <typename T>
void ReduceSemanticsTest::expectIntegerAvg(collDataType_t type) const {
  using Lim = std::numeric_limits<T>;
  const std::vector<T> edges = {Lim::min(), T(Lim::min() + 1), T(Lim::min() / 2), T(-7), T(-1), T(0), T(1),
                                T(7), T(Lim::max() / 2), T(Lim::max() - 1), Lim::max()};
  std::vector<std::vector<T>> srcs(2);
  for (T x : edges) {
    for (T y : edges) {
      srcs[0].push_back(x);
      srcs[1].push_back(y);
    }
  }
  for (int divisor : {2, 3, 7, 100, 127, 128, 255, 256, 257, 65537, (1 << 24) + 1, std::numeric_limits<int>::max()}) {
    const std::vector<T> out = reduceColumns(type, collAvg, srcs, divisor);
    for (size_t k = 0; k < out.size(); ++k) {
      using U = std::make_unsigned_t<T>;
      const T sum = T(U(U(srcs[0][k]) + U(srcs[1][k])));
      const T want = std::is_signed_v<T> ? T(int64_t(sum) / int64_t(divisor)) : T(uint64_t(sum) / uint64_t(divisor));
      ASSERT_EQ(out[k], want) << dataTypeName(type) << " (" << +srcs[0][k] << " + " << +srcs[1][k] << ") / "
                              << divisor;
    }
  }
}

TEST_P(ReduceSemanticsTest, IntegerAvgAtTheLimits) {
  expectIntegerAvg<int8_t>(collInt8);
  expectIntegerAvg<uint8_t>(collUint8);
  expectIntegerAvg<int32_t>(collInt32);
  expectIntegerAvg<uint32_t>(collUint32);
  expectIntegerAvg<int64_t>(collInt64);
  expectIntegerAvg<uint64_t>(collUint64);
}

// Every int32 numerator of the form q*d - 1 and q*d for a spread of divisors: the quotients that
// sit closest to an integer, where a floating-point division would be most likely to round over.
TEST_P(ReduceSemanticsTest, Int32AvgNearIntegerQuotients) {
  for (int divisor : {3, 10, 1000, 46341, 1 << 20, 2147483647}) {
    std::vector<std::vector<int32_t>> srcs(2);
    for (int64_t q = -(int64_t(1) << 31) / divisor; q <= ((int64_t(1) << 31) - 1) / divisor;
         q += std::max<int64_t>(1, ((int64_t(1) << 32) / divisor) / 4093)) {
      for (int64_t delta : {-1, 0, 1}) {
        const int64_t x = q * divisor + delta;
        if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) continue;
        srcs[0].push_back(int32_t(x));
        srcs[1].push_back(0);
      }
    }
    const std::vector<int32_t> out = reduceColumns(collInt32, collAvg, srcs, divisor);
    for (size_t k = 0; k < out.size(); ++k) ASSERT_EQ(out[k], srcs[0][k] / divisor) << srcs[0][k] << " / " << divisor;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryVariant, ReduceSemanticsTest, testing::everyHostVariant(), testing::hostVariantName);

}  // namespace
}  // namespace kernels
}  // namespace coll
