// Which build of the host reduce loops runs: what the CPU can run, read once, and COLL_CPU_KERNELS.
#include "kernels/cpu/host_kernels.h"

#include <strings.h>

#include <cstdlib>

#include "common/logging.h"

#if defined(COLL_KERNEL_X86_VARIANTS)
#include <cpuid.h>
#endif

namespace coll {
namespace kernels {
namespace {

bool anyCpu() { return true; }

#if defined(COLL_KERNEL_X86_VARIANTS)
// F16C straight from CPUID because Clang before 16 has no __builtin_cpu_supports name for it.
// The OS side (XCR0 says the YMM registers are saved) is covered by the "avx2" test beside it.
bool cpuHasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

// __builtin_cpu_supports reports a feature only when the OS also saves its registers (XCR0),
// which the CPUID bits alone do not say. __builtin_cpu_init makes these safe to call from
// static constructors too.
bool cpuRunsAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpuHasF16c();
}

bool cpuRunsAvx512() {
  return cpuRunsAvx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
#endif

// Most portable first: the choice takes the last one the CPU runs.
const HostKernels kVariants[] = {
    {"generic", IsaVariant::generic, anyCpu, &genericReduceLoops},
#if defined(COLL_KERNEL_X86_VARIANTS)
    {"avx2", IsaVariant::avx2, cpuRunsAvx2, &avx2ReduceLoops},
    {"avx512", IsaVariant::avx512, cpuRunsAvx512, &avx512ReduceLoops},
#endif
};
constexpr int kVariantCount = int(sizeof(kVariants) / sizeof(kVariants[0]));

bool thisCpuRuns(const HostKernels& kernels) { return kernels.cpuCanRun(); }

// "generic, avx2 or avx512"; with canRun, only the ones it accepts.
std::string listNames(bool (*canRun)(const HostKernels&), const char* lastSeparator) {
  std::string text;
  int listed = 0;
  int total = 0;
  for (const HostKernels& k : kVariants) total += canRun == nullptr || canRun(k) ? 1 : 0;
  for (const HostKernels& k : kVariants) {
    if (canRun != nullptr && !canRun(k)) continue;
    if (listed > 0) text += listed + 1 == total ? lastSeparator : ", ";
    text += k.name;
    ++listed;
  }
  return text;
}

}  // namespace

int hostKernelsCount() { return kVariantCount; }

const HostKernels& hostKernels(int index) { return kVariants[index]; }

const HostKernels& chooseHostKernels(const char* request, bool (*canRun)(const HostKernels&), std::string* complaint) {
  complaint->clear();
  // generic runs everywhere, so there always is a fastest runnable one.
  const HostKernels* fastest = &kVariants[0];
  for (const HostKernels& k : kVariants) fastest = canRun(k) ? &k : fastest;
  if (request == nullptr || *request == '\0') return *fastest;
  for (const HostKernels& k : kVariants) {
    if (strcasecmp(request, k.name) != 0) continue;
    if (canRun(k)) return k;
    *complaint = std::string("COLL_CPU_KERNELS=\"") + request + "\": this CPU cannot run the " + k.name +
                 " kernels (it runs " + listNames(canRun, " and ") + "); using " + fastest->name;
    return *fastest;
  }
  *complaint = std::string("COLL_CPU_KERNELS=\"") + request + "\" is not valid: expected " +
               listNames(nullptr, " or ") + "; using " + fastest->name + ", the fastest this CPU runs";
  return *fastest;
}

const HostKernels& activeHostKernels() {
  // Chosen once per process: a variable that names a variant this CPU lacks must not turn into an
  // illegal instruction, and a bad value is reported once, not on every call.
  static const HostKernels& chosen = []() -> const HostKernels& {
    std::string complaint;
    const HostKernels& k = chooseHostKernels(getenv("COLL_CPU_KERNELS"), thisCpuRuns, &complaint);
    if (!complaint.empty()) COLL_WARN(kInit, "%s", complaint.c_str());
    return k;
  }();
  return chosen;
}

}  // namespace kernels
}  // namespace coll
