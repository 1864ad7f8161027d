// The scalar half and bfloat16 conversions of kernels/cpu/half.h: exhaustive round trips, every
// rounding tie, infinities, NaN and subnormals, and agreement with the F16C hardware where the
// CPU has it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "kernels/cpu/half.h"

namespace coll {
namespace kernels {
namespace {

bool isHalfNan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool isBf16Nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

// The value of a half from its definition, independent of halfToFloat's bit manipulation.
double halfValue(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return (h & 0x8000) ? -magnitude : magnitude;
}

TEST(HalfTest, EveryHalfWidensExactlyAndRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = halfToFloat(uint16_t(h));
    if (isHalfNan(uint16_t(h))) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << h;
      EXPECT_TRUE(isHalfNan(floatToHalf(f))) << std::hex << h;
      EXPECT_EQ(floatToHalf(f) & 0x8000, h & 0x8000) << "NaN keeps its sign, " << std::hex << h;
      continue;
    }
    if ((h & 0x7fff) == 0x7c00) {
      EXPECT_EQ(f, (h & 0x8000) ? -HUGE_VALF : HUGE_VALF);
    } else {
      EXPECT_EQ(double(f), halfValue(uint16_t(h))) << std::hex << h;
    }
    EXPECT_EQ(floatToHalf(f), h) << std::hex << h;
  }
}

// Midway between two neighbouring halves the even one wins; a float ulp either side picks the
// nearer one. Covers subnormal, normal and the overflow boundary (65504 | 65520 | inf).
TEST(HalfTest, TiesRoundToEven) {
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float lo = halfToFloat(uint16_t(h));
    const float hi = halfToFloat(uint16_t(h + 1));  // h + 1 == 0x7c00 is infinity: use 65536
    const float upper = h + 1 == 0x7c00 ? 65536.0f : hi;
    const float mid = lo + (upper - lo) / 2;  // exact: the halves are 11-bit numbers
    const uint16_t even = (h & 1) ? uint16_t(h + 1) : uint16_t(h);
    EXPECT_EQ(floatToHalf(mid), even) << std::hex << h;
    EXPECT_EQ(floatToHalf(-mid), even | 0x8000) << std::hex << h;
    EXPECT_EQ(floatToHalf(std::nextafter(mid, 0.0f)), h) << std::hex << h;
    EXPECT_EQ(floatToHalf(std::nextafter(mid, HUGE_VALF)), h + 1) << std::hex << h;
  }
}

TEST(HalfTest, SpecialValues) {
  EXPECT_EQ(floatToHalf(HUGE_VALF), 0x7c00);
  EXPECT_EQ(floatToHalf(-HUGE_VALF), 0xfc00);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.996f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);
  EXPECT_EQ(floatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);               // smallest subnormal
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);               // tie between 0 and 2^-24: even is 0
  EXPECT_EQ(floatToHalf(0x1.000002p-25f), 0x0001);        // just above the tie
  EXPECT_EQ(floatToHalf(0x1.8p-24f), 0x0002);             // 1.5 * 2^-24: tie, even is 2
  EXPECT_EQ(floatToHalf(0x1p-14f), 0x0400);               // smallest normal
  EXPECT_EQ(floatToHalf(0x1.ff8p-15f), 0x03ff);           // largest subnormal
  EXPECT_EQ(floatToHalf(0x1.ffcp-15f), 0x0400);           // ... + half ulp: a tie that carries to normal
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::denorm_min()), 0x8000);
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_TRUE(isHalfNan(floatToHalf(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload lies only in bits that half drops must not become infinity.
  EXPECT_TRUE(isHalfNan(floatToHalf(bitsToFloat(0x7f800001u))));
  EXPECT_TRUE(isHalfNan(floatToHalf(bitsToFloat(0xff800001u))));
}

#if defined(__x86_64__)
// The hardware conversion, compiled for F16C whatever the build targets: the test runs it only
// where the CPU has F16C (and the OS saves the AVX registers it uses).
__attribute__((target("f16c"))) uint16_t f16cFloatToHalf(float f) {
  return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

bool cpuHasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

// The avx2 and avx512 kernels convert with F16C; the tests' reference converts with floatToHalf.
// They must agree.
TEST(HalfTest, AgreesWithF16cOnRandomFloats) {
  if (!cpuHasF16c()) GTEST_SKIP() << "this CPU has no F16C";
  uint64_t state = 12345;
  for (int i = 0; i < 2000000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const uint32_t bits = uint32_t(state >> 32);
    const float f = bitsToFloat(bits);
    const uint16_t hw = f16cFloatToHalf(f);
    const uint16_t sw = floatToHalf(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(isHalfNan(sw) && isHalfNan(hw)) << std::hex << bits;
    } else {
      ASSERT_EQ(sw, hw) << std::hex << bits;
    }
  }
}
#endif

TEST(Bfloat16Test, EveryBfloat16RoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const float f = bfloat16ToFloat(uint16_t(b));
    EXPECT_EQ(floatToBits(f), b << 16);
    if (isBf16Nan(uint16_t(b))) {
      EXPECT_TRUE(isBf16Nan(floatToBfloat16(f))) << std::hex << b;
    } else {
      EXPECT_EQ(floatToBfloat16(f), b) << std::hex << b;
    }
  }
}

TEST(Bfloat16Test, TiesRoundToEvenAndSpecialValues) {
  // The tie sits at bit 15 of the float pattern, for every bfloat16 below infinity.
  for (uint32_t b = 0; b < 0x7f80; ++b) {
    const uint32_t mid = (b << 16) | 0x8000u;
    const uint16_t even = (b & 1) ? uint16_t(b + 1) : uint16_t(b);
    EXPECT_EQ(floatToBfloat16(bitsToFloat(mid)), even) << std::hex << b;
    EXPECT_EQ(floatToBfloat16(bitsToFloat(mid | 0x80000000u)), even | 0x8000) << std::hex << b;
    EXPECT_EQ(floatToBfloat16(bitsToFloat(mid - 1)), b) << std::hex << b;
    EXPECT_EQ(floatToBfloat16(bitsToFloat(mid + 1)), b + 1) << std::hex << b;
  }
  EXPECT_EQ(floatToBfloat16(HUGE_VALF), 0x7f80);
  EXPECT_EQ(floatToBfloat16(-HUGE_VALF), 0xff80);
  EXPECT_EQ(floatToBfloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds up past the largest
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBfloat16(-0.0f), 0x8000);
  EXPECT_EQ(floatToBfloat16(bitsToFloat(0x00008000u)), 0x0000);  // subnormal tie: even is 0
  EXPECT_EQ(floatToBfloat16(bitsToFloat(0x00018000u)), 0x0002);  // subnormal tie: even is 2
  EXPECT_EQ(floatToBfloat16(bitsToFloat(0x007fffffu)), 0x0080);  // largest subnormal carries to normal
  EXPECT_TRUE(isBf16Nan(floatToBfloat16(std::numeric_limits<float>::quiet_NaN())));
  // Payload only in the low bits, and the largest NaN pattern: still NaN, never infinity or zero.
  EXPECT_TRUE(isBf16Nan(floatToBfloat16(bitsToFloat(0x7f800001u))));
  EXPECT_TRUE(isBf16Nan(floatToBfloat16(bitsToFloat(0xffffffffu))));
}

}  // namespace
}  // namespace kernels
}  // namespace coll
