// The choice among the builds of the host reduce loops (kernels/cpu/host_kernels.h): which
// variants a CPU runs, read here independently of the library (CPUID and XGETBV by hand), the
// variant reduceCopy picked, and COLL_CPU_KERNELS's rules. Run under qemu with older CPU models
// (tests/portable), this is the test that the dispatcher never picks what the CPU cannot run.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "kernels/cpu/host_kernels.h"

namespace coll {
namespace kernels {
namespace {

#if defined(__x86_64__)
// What each variant's -m flags need (cmake/isa_variants.cmake): the instructions, and the OS saving
// the registers they use (XCR0: SSE and AVX state, then the AVX-512 mask and upper ZMM state).
bool cpuidSaysRuns(const std::string& variant) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (variant == "generic") return true;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool fma = (ecx & bit_FMA) != 0, f16c = (ecx & bit_F16C) != 0, avx = (ecx & bit_AVX) != 0;
  uint64_t xcr0 = 0;
  if ((ecx & bit_OSXSAVE) != 0) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (uint64_t(hi) << 32) | lo;
  }
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool avx2 = avx && fma && f16c && (ebx & bit_AVX2) != 0 && (xcr0 & 0x6) == 0x6;
  if (variant == "avx2") return avx2;
  const unsigned avx512 = bit_AVX512F | bit_AVX512BW | bit_AVX512VL | bit_AVX512DQ;
  if (variant == "avx512") return avx2 && (ebx & avx512) == avx512 && (xcr0 & 0xe6) == 0xe6;
  ADD_FAILURE() << "no CPUID rule for the variant " << variant;
  return false;
}
#else
bool cpuidSaysRuns(const std::string& variant) { return variant == "generic"; }
#endif

std::vector<std::string> variantNames() {
  std::vector<std::string> names;
  for (int i = 0; i < hostKernelsCount(); ++i) names.push_back(hostKernels(i).name);
  return names;
}

TEST(HostKernelsTest, EveryVariantIsBuiltWithItsVectorWidth) {
#if defined(__x86_64__)
  EXPECT_EQ(variantNames(), (std::vector<std::string>{"generic", "avx2", "avx512"}));
  ASSERT_EQ(hostKernelsCount(), 3);
  // At least: a COLL_NATIVE_ARCH=ON build compiles every variant for this machine.
  EXPECT_GE(hostKernels(0).loops->vectorBytes, 16u);
  EXPECT_GE(hostKernels(1).loops->vectorBytes, 32u);
  EXPECT_EQ(hostKernels(2).loops->vectorBytes, 64u);
#else
  EXPECT_EQ(variantNames(), std::vector<std::string>{"generic"});
#endif
}

TEST(HostKernelsTest, EveryVariantKnowsWhetherThisCpuRunsIt) {
  for (int i = 0; i < hostKernelsCount(); ++i) {
    const HostKernels& k = hostKernels(i);
    EXPECT_EQ(k.cpuCanRun(), cpuidSaysRuns(k.name)) << k.name;
  }
}

// With COLL_CPU_KERNELS as this process got it: the requested variant when this CPU runs it, else
// the fastest one it runs; never one it cannot run.
TEST(HostKernelsTest, ReduceCopyUsesAVariantThisCpuRuns) {
  const HostKernels& active = activeHostKernels();
  EXPECT_TRUE(cpuidSaysRuns(active.name)) << "reduceCopy chose " << active.name << ", which this CPU cannot run";
  std::string expected = "generic";
  for (const std::string& name : variantNames()) expected = cpuidSaysRuns(name) ? name : expected;
  const char* request = getenv("COLL_CPU_KERNELS");
  for (const std::string& name : variantNames()) {
    if (request != nullptr && name == request && cpuidSaysRuns(name)) expected = name;
  }
  EXPECT_EQ(active.name, expected) << "COLL_CPU_KERNELS=" << (request != nullptr ? request : "(unset)");
}

bool runsAll(const HostKernels&) { return true; }
bool runsGenericOnly(const HostKernels& k) { return std::strcmp(k.name, "generic") == 0; }
bool runsAllButAvx512(const HostKernels& k) { return std::strcmp(k.name, "avx512") != 0; }

const std::string& fastest() {
  static const std::string name = hostKernels(hostKernelsCount() - 1).name;
  return name;
}

TEST(HostKernelsTest, NoRequestPicksTheFastestTheCpuRuns) {
  std::string complaint = "stale";
  EXPECT_EQ(chooseHostKernels(nullptr, runsAll, &complaint).name, fastest());
  EXPECT_EQ(complaint, "");
  EXPECT_STREQ(chooseHostKernels("", runsGenericOnly, &complaint).name, "generic");
  EXPECT_EQ(complaint, "");
}

TEST(HostKernelsTest, ARunnableRequestIsHonoured) {
  std::string complaint;
  for (const std::string& name : variantNames()) {
    EXPECT_EQ(chooseHostKernels(name.c_str(), runsAll, &complaint).name, name);
    EXPECT_EQ(complaint, "");
  }
  EXPECT_STREQ(chooseHostKernels("GENERIC", runsAll, &complaint).name, "generic");
}

TEST(HostKernelsTest, ARequestTheCpuCannotRunFallsBackAndSaysWhy) {
#if defined(__x86_64__)
  std::string complaint;
  EXPECT_STREQ(chooseHostKernels("avx512", runsAllButAvx512, &complaint).name, "avx2");
  EXPECT_EQ(complaint,
            "COLL_CPU_KERNELS=\"avx512\": this CPU cannot run the avx512 kernels (it runs generic and avx2); "
            "using avx2");
  EXPECT_STREQ(chooseHostKernels("avx2", runsGenericOnly, &complaint).name, "generic");
  EXPECT_NE(complaint.find("cannot run the avx2 kernels"), std::string::npos) << complaint;
#else
  GTEST_SKIP() << "only the generic kernels are built for this architecture";
#endif
}

TEST(HostKernelsTest, AnUnknownRequestFallsBackAndSaysWhatIsAllowed) {
  std::string complaint;
  EXPECT_EQ(chooseHostKernels("avx1024", runsAll, &complaint).name, fastest());
  EXPECT_NE(complaint.find("COLL_CPU_KERNELS=\"avx1024\" is not valid: expected generic"), std::string::npos)
      << complaint;
  for (const std::string& name : variantNames()) EXPECT_NE(complaint.find(name), std::string::npos) << complaint;
  EXPECT_STREQ(chooseHostKernels("native", runsGenericOnly, &complaint).name, "generic");
  EXPECT_NE(complaint.find("using generic"), std::string::npos) << complaint;
}

}  // namespace
}  // namespace kernels
}  // namespace coll
