// The builds of the host reduce loops (kernels/cpu/host_kernels.h) as a test parameter: each
// kernel test runs against every variant in this binary, whichever one reduceCopy itself would
// pick, and skips, by name, the variants this CPU cannot run.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "kernels/cpu/host_kernels.h"

namespace coll {
namespace kernels {
namespace testing {

inline auto everyHostVariant() { return ::testing::Range(0, hostKernelsCount()); }

inline std::string hostVariantName(const ::testing::TestParamInfo<int>& info) { return hostKernels(info.param).name; }

// A suite parameterized by the variant alone.
class HostVariantTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (!kernels().cpuCanRun()) GTEST_SKIP() << "this CPU cannot run the " << kernels().name << " kernels";
  }
  const HostKernels& kernels() const { return hostKernels(GetParam()); }
};

}  // namespace testing
}  // namespace kernels
}  // namespace coll
