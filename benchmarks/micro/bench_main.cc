// The main() of the micro-benchmarks: Google Benchmark's own, plus a context line that names the
// instruction-set variant the process runs ("host_kernels"), since every figure depends on it and
// COLL_CPU_KERNELS can change it.
#include <benchmark/benchmark.h>

#include "kernels/cpu/host_kernels.h"

int main(int argc, char** argv) {
  benchmark::AddCustomContext("host_kernels", coll::kernels::activeHostKernels().name);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
