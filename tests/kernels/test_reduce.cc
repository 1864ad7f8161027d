// reduceCopy against the scalar reference, for every instruction-set variant x type x op x source
// count x destination count, over counts that hit every vector tail and block boundary, with
// aligned, misaligned and in-place buffers; destinations are poisoned and the bytes around every
// buffer are checked.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/host_kernels.h"
#include "kernels/cpu/reduce.h"
#include "tests/kernels/host_variants.h"
#include "tests/kernels/reduce_reference.h"

namespace coll {
namespace kernels {
namespace {

using testing::HostVariantTest;
using testing::Kind;
using testing::Rng;
using testing::withReference;

constexpr unsigned char kPoison = 0xa5;
constexpr size_t kGuardBytes = 64;
const size_t kCounts[] = {0, 1, 3, 7, 15, 16, 17, 31, 33, 63, 64, 65, 1000, 4097, 100003};
constexpr size_t kMaxCount = 100003;

enum class Layout { Aligned, Misaligned, InPlace };

// count elements with kGuardBytes of poison on each side; Misaligned shifts the data by one
// element, so vector loads and stores cross alignment boundaries. The storage is borrowed and
// reused from case to case: allocating it afresh cost more time in page faults than the tests.
class GuardedBuffer {
 public:
  GuardedBuffer(std::vector<unsigned char>& storage, size_t elemSize, size_t count, bool misaligned)
      : offset_(kGuardBytes + (misaligned ? elemSize : 0)), bytes_(count * elemSize), storage_(storage) {
    storage_.assign(offset_ + bytes_ + kGuardBytes, kPoison);
  }
  unsigned char* data() { return storage_.data() + offset_; }
  size_t bytes() const { return bytes_; }
  bool guardsIntact() const {
    for (size_t i = 0; i < offset_; ++i) {
      if (storage_[i] != kPoison) return false;
    }
    for (size_t i = offset_ + bytes_; i < storage_.size(); ++i) {
      if (storage_[i] != kPoison) return false;
    }
    return true;
  }

 private:
  size_t offset_;
  size_t bytes_;
  std::vector<unsigned char>& storage_;
};

template <class R>
std::string describe(typename R::Storage v) {
  std::ostringstream os;
  if constexpr (R::kKind == Kind::Half || R::kKind == Kind::Bf16) {
    os << "0x" << std::hex << v << std::dec << " (" << R::widen(v) << ")";
  } else if constexpr (R::kKind == Kind::Int) {
    os << +v;
  } else {
    os << v;
  }
  return os.str();
}

// Empty when dst[0, count) matches expected.
template <class R>
std::string compare(const unsigned char* dst, const std::vector<typename R::Storage>& expected, size_t count) {
  using S = typename R::Storage;
  for (size_t i = 0; i < count; ++i) {
    S got;
    std::memcpy(&got, dst + i * sizeof(S), sizeof(S));
    if (!R::same(got, expected[i])) {
      return "element " + std::to_string(i) + ": got " + describe<R>(got) + ", want " + describe<R>(expected[i]);
    }
  }
  return "";
}

// Runs one variant's reduceCopy over a prefix of the given inputs in one layout and checks everything.
template <class R>
void checkCase(const HostKernels& kernels, collDataType_t type, collRedOp_t op, const std::vector<std::vector<typename R::Storage>>& inputs,
               int ndsts, size_t count, int divisor, Layout layout, const std::vector<typename R::Storage>& expected) {
  using S = typename R::Storage;
  const int nsrcs = int(inputs.size());
  const bool misaligned = layout != Layout::Aligned;
  static std::vector<std::vector<unsigned char>> storage(kMaxReduceSources + kMaxCopyDestinations);
  std::vector<GuardedBuffer> srcBufs, dstBufs;
  for (int i = 0; i < nsrcs; ++i) {
    srcBufs.emplace_back(storage[i], sizeof(S), count, misaligned);
    std::memcpy(srcBufs.back().data(), inputs[i].data(), count * sizeof(S));
  }
  const void* srcs[kMaxReduceSources];
  void* dsts[kMaxCopyDestinations];
  for (int i = 0; i < nsrcs; ++i) srcs[i] = srcBufs[i].data();
  for (int j = 0; j < ndsts; ++j) {
    dstBufs.emplace_back(storage[kMaxReduceSources + j], sizeof(S), count, misaligned);
    // In place: destination j is source j wherever both exist (dst == srcs[0] is the common case).
    dsts[j] = layout == Layout::InPlace && j < nsrcs ? srcBufs[j].data() : dstBufs[j].data();
  }
  reduceCopyWith(kernels, type, op, srcs, nsrcs, dsts, ndsts, count, divisor);
  for (int j = 0; j < ndsts; ++j) {
    const std::string diff = compare<R>(static_cast<unsigned char*>(dsts[j]), expected, count);
    EXPECT_TRUE(diff.empty()) << "destination " << j << ", " << diff;
    EXPECT_TRUE(dstBufs[j].guardsIntact()) << "destination " << j << " written outside [0, count)";
  }
  for (int i = 0; i < nsrcs; ++i) {
    EXPECT_TRUE(srcBufs[i].guardsIntact()) << "source " << i << " written outside [0, count)";
    const bool overwritten = layout == Layout::InPlace && i < ndsts;
    if (!overwritten) {
      EXPECT_EQ(std::memcmp(srcBufs[i].data(), inputs[i].data(), count * sizeof(S)), 0) << "source " << i << " changed";
    }
  }
}

using MatrixParam = std::tuple<int /*variant*/, int /*type*/, int /*op*/, int /*nsrcs*/, int /*ndsts*/>;

class ReduceMatrixTest : public ::testing::TestWithParam<MatrixParam> {};

TEST_P(ReduceMatrixTest, MatchesReference) {
  const HostKernels& kernels = hostKernels(std::get<0>(GetParam()));
  if (!kernels.cpuCanRun()) GTEST_SKIP() << "this CPU cannot run the " << kernels.name << " kernels";
  const auto type = collDataType_t(std::get<1>(GetParam()));
  const auto op = collRedOp_t(std::get<2>(GetParam()));
  const int nsrcs = std::get<3>(GetParam());
  const int ndsts = std::get<4>(GetParam());
  // A divisor is passed to every op: all but avg must ignore it. Avg also runs without a division
  // (divisor 0), with 1, with the source count (what all-reduce passes) and with one that
  // exceeds the range of 8-bit types.
  const std::vector<int> divisors = op == collAvg ? std::vector<int>{0, 1, nsrcs + 1, 300} : std::vector<int>{7};
  withReference(type, [&](auto ref) {
    using R = decltype(ref);
    Rng rng(uint64_t(type) * 1000003u + uint64_t(op) * 10007u + uint64_t(nsrcs) * 101u + uint64_t(ndsts));
    std::vector<std::vector<typename R::Storage>> inputs(nsrcs);
    for (auto& in : inputs) {
      in.resize(kMaxCount);
      for (auto& v : in) v = R::smallValue(rng, op);
    }
    for (int divisor : divisors) {
      std::vector<typename R::Storage> expected;
      // Elementwise, so the reference for the longest count serves every shorter one.
      R::reduce(op, inputs, kMaxCount, divisor, &expected);
      for (size_t count : kCounts) {
        for (Layout layout : {Layout::Aligned, Layout::Misaligned, Layout::InPlace}) {
          SCOPED_TRACE("count " + std::to_string(count) + ", divisor " + std::to_string(divisor) + ", layout " +
                       std::to_string(int(layout)));
          checkCase<R>(kernels, type, op, inputs, ndsts, count, divisor, layout, expected);
          if (HasFailure()) return;
        }
      }
    }
  });
}

std::string matrixName(const ::testing::TestParamInfo<MatrixParam>& info) {
  return std::string(hostKernels(std::get<0>(info.param)).name) + "_" +
         dataTypeName(collDataType_t(std::get<1>(info.param))) + "_" + redOpName(collRedOp_t(std::get<2>(info.param))) +
         "_" + std::to_string(std::get<3>(info.param)) + "src_" + std::to_string(std::get<4>(info.param)) + "dst";
}

INSTANTIATE_TEST_SUITE_P(AllTypesOps, ReduceMatrixTest,
                         ::testing::Combine(testing::everyHostVariant(), ::testing::Range(0, int(collNumTypes)),
                                            ::testing::Range(0, int(collNumOps)), ::testing::Values(1, 2, 3, 5, 8),
                                            ::testing::Values(1, 2)),
                         matrixName);

// Beyond kernels' single-pass limit of 8 sources, reduceCopy switches to blocked accumulation.
INSTANTIATE_TEST_SUITE_P(ManySources, ReduceMatrixTest,
                         ::testing::Combine(testing::everyHostVariant(), ::testing::Range(0, int(collNumTypes)),
                                            ::testing::Range(0, int(collNumOps)), ::testing::Values(9, 16),
                                            ::testing::Values(2)),
                         matrixName);

class ReduceTest : public HostVariantTest {};

// Full-mantissa values: the kernel must match the reference bit for bit because both combine in
// the same type in the same order and round once.
TEST_P(ReduceTest, RandomFiniteFloatsMatchSameOrderReference) {
  for (collDataType_t type : {collFloat16, collBfloat16, collFloat32, collFloat64}) {
    for (collRedOp_t op : {collSum, collProd, collMax, collMin, collAvg}) {
      for (int nsrcs : {2, 3, 5, 8, 16}) {
        withReference(type, [&](auto ref) {
          using R = decltype(ref);
          SCOPED_TRACE(std::string(dataTypeName(type)) + " " + redOpName(op) + " nsrcs " + std::to_string(nsrcs));
          Rng rng(uint64_t(nsrcs) * 31u + uint64_t(op));
          const size_t count = 5003;
          std::vector<std::vector<typename R::Storage>> inputs(nsrcs);
          for (auto& in : inputs) {
            in.resize(count);
            for (auto& v : in) v = R::randomValue(rng, op);
          }
          std::vector<typename R::Storage> expected;
          R::reduce(op, inputs, count, nsrcs, &expected);
          checkCase<R>(kernels(), type, op, inputs, 2, count, nsrcs, Layout::Misaligned, expected);
          checkCase<R>(kernels(), type, op, inputs, 1, count, nsrcs, Layout::InPlace, expected);
        });
      }
    }
  }
}

// The widest call the header allows.
TEST_P(ReduceTest, MaximumSourcesAndDestinations) {
  for (collDataType_t type : {collInt32, collFloat16, collFloat32, collBfloat16}) {
    withReference(type, [&](auto ref) {
      using R = decltype(ref);
      Rng rng(99);
      std::vector<std::vector<typename R::Storage>> inputs(kMaxReduceSources);
      for (auto& in : inputs) {
        in.resize(20011);
        for (auto& v : in) v = R::smallValue(rng, collSum);
      }
      std::vector<typename R::Storage> expected;
      R::reduce(collSum, inputs, 20011, 0, &expected);
      checkCase<R>(kernels(), type, collSum, inputs, kMaxCopyDestinations, 20011, 0, Layout::Misaligned, expected);
      checkCase<R>(kernels(), type, collSum, inputs, kMaxCopyDestinations, 20011, 0, Layout::InPlace, expected);
    });
  }
}

INSTANTIATE_TEST_SUITE_P(EveryVariant, ReduceTest, testing::everyHostVariant(), testing::hostVariantName);

TEST(ReduceNamesTest, NamesAndSizes) {
  const char* names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16"};
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  for (int t = 0; t < collNumTypes; ++t) {
    EXPECT_STREQ(dataTypeName(collDataType_t(t)), names[t]);
    EXPECT_EQ(dataTypeSize(collDataType_t(t)), sizes[t]);
  }
  EXPECT_STREQ(dataTypeName(collNumTypes), "unknown");
  EXPECT_STREQ(dataTypeName(collDataType_t(-1)), "unknown");
  EXPECT_EQ(dataTypeSize(collNumTypes), 0u);
  EXPECT_EQ(dataTypeSize(collDataType_t(-1)), 0u);
  const char* ops[] = {"sum", "prod", "max", "min", "avg"};
  for (int o = 0; o < collNumOps; ++o) EXPECT_STREQ(redOpName(collRedOp_t(o)), ops[o]);
  EXPECT_STREQ(redOpName(collNumOps), "unknown");
  EXPECT_STREQ(redOpName(collRedOp_t(-1)), "unknown");
}

TEST(ReduceCopyTest, CopyBytes) {
  for (size_t bytes : {size_t(0), size_t(1), size_t(63), size_t(4097), size_t(1) << 20}) {
    std::vector<unsigned char> src(bytes + 1), dst(bytes + 1, kPoison);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 1);
    copyBytes(dst.data(), src.data() + 1, bytes);
    EXPECT_EQ(std::memcmp(dst.data(), src.data() + 1, bytes), 0);
    EXPECT_EQ(dst[bytes], kPoison);
    copyBytes(src.data(), src.data(), bytes);  // onto itself: a no-op
  }
}

// A bad internal call must not index out of the table or write anything.
TEST(ReduceCopyTest, OutOfRangeArgumentsWriteNothing) {
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1}, out[4] = {-1, -1, -1, -1};
  const void* srcs[2] = {a, b};
  void* dsts[1] = {out};
  reduceCopy(collNumTypes, collSum, srcs, 2, dsts, 1, 4, 0);
  reduceCopy(collDataType_t(-1), collSum, srcs, 2, dsts, 1, 4, 0);
  reduceCopy(collFloat32, collNumOps, srcs, 2, dsts, 1, 4, 0);
  reduceCopy(collFloat32, collSum, srcs, 0, dsts, 1, 4, 0);
  reduceCopy(collFloat32, collSum, srcs, kMaxReduceSources + 1, dsts, 1, 4, 0);
  reduceCopy(collFloat32, collSum, srcs, 2, dsts, 0, 4, 0);
  reduceCopy(collFloat32, collSum, srcs, 2, dsts, kMaxCopyDestinations + 1, 4, 0);
  for (float v : out) EXPECT_EQ(v, -1.0f);
  reduceCopy(collFloat32, collSum, nullptr, 2, nullptr, 1, 0, 0);  // count 0 touches nothing
}

// reduceCopy itself (the variant the dispatcher chose) on one case per type: the matrix above
// calls each variant directly.
TEST(ReduceCopyTest, ChosenVariantMatchesReference) {
  for (int t = 0; t < collNumTypes; ++t) {
    const auto type = collDataType_t(t);
    withReference(type, [&](auto ref) {
      using R = decltype(ref);
      Rng rng(uint64_t(t) + 17u);
      std::vector<std::vector<typename R::Storage>> inputs(3);
      for (auto& in : inputs) {
        in.resize(1003);
        for (auto& v : in) v = R::smallValue(rng, collSum);
      }
      std::vector<typename R::Storage> expected;
      R::reduce(collSum, inputs, 1003, 0, &expected);
      std::vector<typename R::Storage> out(1003);
      const void* srcs[3] = {inputs[0].data(), inputs[1].data(), inputs[2].data()};
      void* dst = out.data();
      reduceCopy(type, collSum, srcs, 3, &dst, 1, 1003, 0);
      EXPECT_EQ(compare<R>(reinterpret_cast<const unsigned char*>(out.data()), expected, 1003), "")
          << dataTypeName(type) << " with the " << activeHostKernels().name << " kernels";
    });
  }
}

}  // namespace
}  // namespace kernels
}  // namespace coll
