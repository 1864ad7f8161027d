// Time per call of the ZeRO optimizer step (collZeroOptimizerStep) on one shard of 2,097,152
// elements, the size docs/performance.md reports: AdamW with float32 gradients and a bfloat16
// parameter copy (mixed precision), AdamW with bfloat16 gradients, and SGD with momentum; and the
// squared norm of gradient clipping (collZeroSquaredNorm) of float32 and bfloat16 gradients. Every
// buffer of a step together is about 60 MiB, more than the caches: the step streams from memory.
// The step runs the instruction-set variant chosen for this CPU (the context line "host_kernels"
// names it); COLL_CPU_KERNELS=generic|avx2|avx512 measures another.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "collective_zero.h"
#include "kernels/cpu/half.h"

namespace {

constexpr size_t kCount = size_t(1) << 21;

void runStep(benchmark::State& state, collZeroOptimizer_t optimizer, collDataType_t gradType) {
  collZeroStepConfig_t config{};
  config.optimizer = optimizer;
  config.lr = 1e-3;
  config.beta1 = 0.9;
  config.beta2 = 0.999;
  config.eps = 1e-8;
  config.weightDecay = 0.01;
  config.momentum = 0.9;
  config.gradScale = 1.0;
  // Values of the size training sees, different per element, so that no run meets subnormals.
  std::vector<float> master(kCount), state0(kCount, 0.0f), state1(kCount, 0.0f), grad32(kCount);
  std::vector<uint16_t> grad16(kCount), paramOut(kCount);
  for (size_t i = 0; i < kCount; ++i) {
    master[i] = 0.5f + float(i % 1000) * 1e-3f;
    grad32[i] = (float(i % 199) - 99.0f) * 1e-4f;
    grad16[i] = coll::kernels::floatToBfloat16(grad32[i]);
  }
  const void* grad = gradType == collFloat32 ? static_cast<const void*>(grad32.data()) : grad16.data();
  long long step = 0;
  for (auto _ : state) {
    config.step = ++step;
    if (collZeroOptimizerStep(&config, master.data(), grad, gradType, state0.data(), state1.data(), paramOut.data(),
                              collBfloat16, kCount) != collSuccess) {
      state.SkipWithError(collGetLastError(nullptr));
      break;
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(kCount));
}

// The squared norm of gradient clipping (collZeroSquaredNorm) over the same count.
void runNorm(benchmark::State& state, collDataType_t type) {
  std::vector<float> grad32(kCount);
  std::vector<uint16_t> grad16(kCount);
  for (size_t i = 0; i < kCount; ++i) {
    grad32[i] = (float(i % 199) - 99.0f) * 1e-4f;
    grad16[i] = coll::kernels::floatToBfloat16(grad32[i]);
  }
  const void* data = type == collFloat32 ? static_cast<const void*>(grad32.data()) : grad16.data();
  for (auto _ : state) {
    double sum = 0.0;
    int nonFinite = 0;
    if (collZeroSquaredNorm(data, type, kCount, &sum, &nonFinite) != collSuccess) {
      state.SkipWithError(collGetLastError(nullptr));
      break;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(kCount));
}

void BM_AdamWFloatGradBfloat16Copy(benchmark::State& state) { runStep(state, collZeroAdamW, collFloat32); }
void BM_AdamWBfloat16Grad(benchmark::State& state) { runStep(state, collZeroAdamW, collBfloat16); }
void BM_SgdMomentumFloatGrad(benchmark::State& state) { runStep(state, collZeroSgd, collFloat32); }

BENCHMARK(BM_AdamWFloatGradBfloat16Copy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AdamWBfloat16Grad)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SgdMomentumFloatGrad)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SquaredNormFloat(benchmark::State& state) { runNorm(state, collFloat32); }
void BM_SquaredNormBfloat16(benchmark::State& state) { runNorm(state, collBfloat16); }
BENCHMARK(BM_SquaredNormFloat)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SquaredNormBfloat16)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
