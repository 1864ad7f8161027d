// The host reduce loops are built once per instruction set (kernels/cpu/isa/) and one build is
// chosen at run time, so a binary made on any machine runs, at full speed, on every CPU of its
// architecture. On x86-64: generic (the baseline, SSE2), avx2 and avx512; elsewhere generic only.
// Layers above that build loops of their own per variant (zero/'s optimizer loops) follow the
// same choice: one per process, for every layer, made and reported here.
#pragma once

#include <cstddef>
#include <string>

#include "collective.h"
#include "kernels/cpu/reduce_variant.h"

namespace coll {
namespace kernels {

// Every variant there is on any architecture; the value indexes the per-variant tables of the
// layers above (a table holds null where its architecture builds no such variant).
enum class IsaVariant { generic, avx2, avx512 };
constexpr int kIsaVariantCount = 3;

struct HostKernels {
  const char* name;              // what COLL_CPU_KERNELS calls it: "generic", "avx2", "avx512"
  IsaVariant isa;                // which one it is, for the other layers' tables
  bool (*cpuCanRun)();           // whether this CPU and OS run its instructions
  const ReduceLoopTable* loops;  // its loops
};

// Every variant in this build, from the most portable to the fastest.
int hostKernelsCount();
const HostKernels& hostKernels(int index);

// The variant reduceCopy uses, chosen once per process (the first call): COLL_CPU_KERNELS's when it
// names one this CPU runs, else the fastest this CPU runs. An unknown name, or one this CPU cannot
// run, is reported with COLL_WARN and replaced by that fastest one: never an illegal instruction.
const HostKernels& activeHostKernels();

// The choice itself, for the tests: `request` is COLL_CPU_KERNELS's value (null or empty: none) and
// canRun says which variants the CPU runs. *complaint is set, to a message that names the
// variable, the value and what is allowed, when the request cannot be honoured, else cleared.
const HostKernels& chooseHostKernels(const char* request, bool (*canRun)(const HostKernels&), std::string* complaint);

// reduceCopy (reduce.h) with one given variant's loops, whatever the CPU: for the tests and
// benchmarks that compare variants. The caller checks kernels.cpuCanRun() first.
void reduceCopyWith(const HostKernels& kernels, collDataType_t type, collRedOp_t op, const void* const* srcs, int nsrcs,
                    void* const* dsts, int ndsts, size_t count, int avgDivisor);

}  // namespace kernels
}  // namespace coll
