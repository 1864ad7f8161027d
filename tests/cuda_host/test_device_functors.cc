// The device kernels' arithmetic (kernels/cuda/reduce_functors.h) compiled for the host and
// compared with kernels/cpu on random inputs, for every (type, op) of the kernel table
// (kernels/cuda/type_op_table.h): the same table the kernels are instantiated from, so a pair the
// kernels have is a pair this test checks. Pack widths of 1, 4 and 16 bytes and 1..5 sources;
// avg with and without its division. Results must be bit-identical (any NaN matches any NaN).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/reduce.h"
#include "kernels/cuda/type_op_table.h"
#include "tests/kernels/reduce_reference.h"

namespace coll {
namespace device {
namespace {

using kernels::testing::Rng;

template <typename T>
bool isNanBits(const T& v) {
  if constexpr (std::is_same_v<T, Half>) {
    return (v.bits & 0x7c00) == 0x7c00 && (v.bits & 0x3ff) != 0;
  } else if constexpr (std::is_same_v<T, Bfloat16>) {
    return (v.bits & 0x7f80) == 0x7f80 && (v.bits & 0x7f) != 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}

// Random bit patterns for integers; for floating types a mix of small integers (exact sums),
// values with full mantissas, and now and then a NaN or an infinity.
template <typename T>
T randomElement(Rng& rng) {
  uint64_t bits = rng.next();
  T v;
  if constexpr (std::is_integral_v<T>) {
    memcpy(&v, &bits, sizeof v);
  } else {
    const int pick = rng.range(0, 19);
    float f = pick < 8 ? float(rng.range(-8, 8)) : float(100.0 * rng.unit());
    if (pick == 18) f = __builtin_nanf("");
    if (pick == 19) f = rng.range(0, 1) ? __builtin_inff() : -__builtin_inff();
    if constexpr (std::is_same_v<T, Half>) {
      v = Half{kernels::floatToHalf(f)};
    } else if constexpr (std::is_same_v<T, Bfloat16>) {
      v = Bfloat16{kernels::floatToBfloat16(f)};
    } else {
      v = T(f);
    }
  }
  return v;
}

// Reduces element-wise with packs of kElems, as the kernels do, into out.
template <typename T, typename Op, int kElems>
void reduceWithFunctor(const std::vector<std::vector<T>>& srcs, size_t count, int divisor, std::vector<T>* out) {
  out->assign(count, T{});
  for (size_t base = 0; base < count; base += kElems) {
    T pack[kElems] = {};
    PackReducer<T, Op, kElems> reducer;
    const size_t n = std::min<size_t>(kElems, count - base);
    for (size_t i = 0; i < n; ++i) pack[i] = srcs[0][base + i];
    reducer.first(pack);
    for (size_t s = 1; s < srcs.size(); ++s) {
      for (size_t i = 0; i < n; ++i) pack[i] = srcs[s][base + i];
      reducer.fold(pack);
    }
    reducer.finish(divisor);
    reducer.store(pack);
    for (size_t i = 0; i < n; ++i) (*out)[base + i] = pack[i];
  }
}

template <typename T, typename Op, int kElems>
std::string checkPair(collDataType_t type, collRedOp_t op, uint64_t seed) {
  Rng rng(seed);
  for (int trial = 0; trial < 40; ++trial) {
    const int nsrcs = rng.range(1, 5);
    const size_t count = size_t(rng.range(1, 67));
    // avg divides only at the final store; the other ops never do.
    const int divisor = op == collAvg && rng.range(0, 3) != 0 ? rng.range(1, 9) : 0;
    std::vector<std::vector<T>> srcs(nsrcs, std::vector<T>(count));
    std::vector<const void*> srcPtrs;
    for (auto& s : srcs) {
      for (T& v : s) v = randomElement<T>(rng);
      srcPtrs.push_back(s.data());
    }
    std::vector<T> expected(count), got;
    void* dst = expected.data();
    kernels::reduceCopy(type, op, srcPtrs.data(), nsrcs, &dst, 1, count, divisor);
    reduceWithFunctor<T, Op, kElems>(srcs, count, divisor, &got);
    for (size_t i = 0; i < count; ++i) {
      const bool same = memcmp(&expected[i], &got[i], sizeof(T)) == 0 || (isNanBits(expected[i]) && isNanBits(got[i]));
      if (!same)
        return std::string(kernels::dataTypeName(type)) + " " + kernels::redOpName(op) + ": element " +
               std::to_string(i) + " of " + std::to_string(count) + " with " + std::to_string(nsrcs) +
               " sources, divisor " + std::to_string(divisor) + " differs from kernels/cpu";
    }
  }
  return "";
}

// Every pair of the kernel table, at three pack widths (bytes: 1 element, 4, 16).
std::vector<std::string> checkTable() {
  std::vector<std::string> failures;
  uint64_t seed = 1;
#define COLL_CHECK_PAIR(T, op, Op)                                                                            \
  for (std::string f : {checkPair<T, Op, 1>(kTableTypes[row], op, seed++),                                    \
                        checkPair<T, Op, (4 >= sizeof(T) ? 4 / sizeof(T) : 1)>(kTableTypes[row], op, seed++), \
                        checkPair<T, Op, 16 / sizeof(T)>(kTableTypes[row], op, seed++)})                      \
    if (!f.empty()) failures.push_back(f);
#define COLL_CHECK_ROW(dtype, T)        \
  {                                     \
    const int row = dtype;              \
    COLL_DEVICE_OPS(COLL_CHECK_PAIR, T) \
  }
  COLL_DEVICE_TYPES(COLL_CHECK_ROW)
#undef COLL_CHECK_ROW
#undef COLL_CHECK_PAIR
  return failures;
}

TEST(DeviceFunctors, MatchHostKernelsForEveryTypeAndOp) {
  std::vector<std::string> failures = checkTable();
  for (const std::string& f : failures) ADD_FAILURE() << f;
}

TEST(DeviceFunctors, TableCoversEveryTypeAndOpInEnumOrder) {
  static_assert(sizeof(kTableTypes) / sizeof(kTableTypes[0]) == collNumTypes, "every type");
  static_assert(sizeof(kTableOps) / sizeof(kTableOps[0]) == collNumOps, "every op");
  EXPECT_TRUE(tableFollowsEnums());
}

TEST(DeviceFunctors, HalfAndBfloat16RoundOnceAtTheStore) {
  // 1 + 2^-11 is not a half; summed in float and rounded once, 2048 + 1 + 1 is 2050 exactly,
  // while rounding after each addition would give 2048 twice.
  const Half a{kernels::floatToHalf(2048.0f)}, b{kernels::floatToHalf(1.0f)};
  Half pack[3] = {a, b, b};
  PackReducer<Half, OpSum, 1> reducer;
  reducer.first(&pack[0]);
  reducer.fold(&pack[1]);
  reducer.fold(&pack[2]);
  reducer.finish(0);
  Half out;
  reducer.store(&out);
  EXPECT_EQ(kernels::halfToFloat(out.bits), 2050.0f);
}

TEST(DeviceFunctors, IntegerAvgIsCDivisionOfTheWrappedSum) {
  int8_t values[2] = {100, 100};  // wraps to -56; -56 / 3 == -18 (truncation toward zero)
  PackReducer<int8_t, OpSum, 1> reducer;
  reducer.first(&values[0]);
  reducer.fold(&values[1]);
  reducer.finish(3);
  int8_t out;
  reducer.store(&out);
  EXPECT_EQ(out, -18);
}

}  // namespace
}  // namespace device
}  // namespace coll
