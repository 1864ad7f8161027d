// The instruction-set variants of the optimizer loops (zero/optimizer_variant.h) against each
// other: every variant this CPU runs computes the same bits as the generic one, for every optimizer
// and precision, at counts that end inside and on the blocks and on every vector width, and so
// does the squared norm. The loops are built without FMA contraction (zero/optimizer_loops.h)
// so that replicas on hosts with different CPUs stay identical; a variant whose compiler fused a
// multiply-add would fail here. Whether the results are right is test_optimizer_step.cc's job, on
// the variant the process chose (run test_zero with COLL_CPU_KERNELS=generic, say, for another).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "optimizer_cases.h"
#include "zero/optimizer_variant.h"
#include "tests/kernels/host_variants.h"
#include "zero_test_util.h"

namespace zerotest {
namespace {

using coll::kernels::hostKernels;
using coll::kernels::IsaVariant;
using coll::kernels::testing::HostVariantTest;
using coll::zero::OptimizerLoops;
using coll::zero::optimizerLoopsOf;

const OptimizerLoops& genericLoops() {
  for (int i = 0; i < coll::kernels::hostKernelsCount(); ++i)
    if (hostKernels(i).isa == IsaVariant::generic) return optimizerLoopsOf(hostKernels(i));
  ADD_FAILURE() << "no generic host kernels";
  return coll::zero::genericOptimizerLoops;
}

class ZeroOptimizerVariant : public HostVariantTest {};

TEST_P(ZeroOptimizerVariant, StepMatchesGenericBitForBit) {
  const OptimizerLoops& generic = genericLoops();
  const OptimizerLoops& mine = optimizerLoopsOf(kernels());
  // 1 and 13: tails only; 1037: four 256-element blocks and 13 left; 4099: sixteen and 3 left.
  for (size_t count : {size_t(1), size_t(13), size_t(1037), size_t(4099)}) {
    for (const NamedConfig& nc : configs()) {
      for (const Precision& precision : kPrecisions) {
        SCOPED_TRACE(caseName(nc, precision, count));
        const StepOutputs want = runSteps(generic.step, nc.config, precision, count, 5);
        const StepOutputs got = runSteps(mine.step, nc.config, precision, count, 5);
        EXPECT_EQ(outputDifferences(got, want), "");
        if (HasFailure()) return;
      }
    }
  }
}

TEST_P(ZeroOptimizerVariant, SquaredNormMatchesGenericBitForBit) {
  const OptimizerLoops& generic = genericLoops();
  const OptimizerLoops& mine = optimizerLoopsOf(kernels());
  const size_t count = 4099;
  for (collDataType_t type : {collFloat32, collFloat16, collBfloat16}) {
    SCOPED_TRACE(typeName(type));
    TypedBuffer data(type, count);
    for (size_t i = 0; i < count; ++i) data.set(i, gradient(3, i) * (type == collFloat16 ? 1024.0 : 1.0));
    const double want = generic.squaredNorm(data.data(), type, count);
    const double got = mine.squaredNorm(data.data(), type, count);
    EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << got << " against " << want;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryVariant, ZeroOptimizerVariant, coll::kernels::testing::everyHostVariant(),
                         coll::kernels::testing::hostVariantName);

// The public entry points run the variant the host kernels run: one choice for the process.
TEST(ZeroOptimizerVariantChoice, StepRunsTheHostKernelsVariant) {
  EXPECT_EQ(&coll::zero::activeOptimizerLoops(), &optimizerLoopsOf(coll::kernels::activeHostKernels()))
      << "host kernels " << coll::kernels::activeHostKernels().name;
}

}  // namespace
}  // namespace zerotest
