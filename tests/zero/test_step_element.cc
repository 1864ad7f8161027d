// The device step's arithmetic where there is no GPU: the element functions the kernel runs
// (zero/step_element.h) run here on the host over the cases of the host step's tests, and must
// give collZeroOptimizerStep's bits exactly, for every optimizer and precision, over several steps
// (so the state they carry forward matches too). The kernel adds only the conversions of its
// gradients and model copy (CUDA's round-to-nearest-even ones); tests/cuda/gpu_zero_step.cc
// compares the kernel itself with the host step on a GPU. Also: collZeroOptimizerStepOnStream and
// collZeroSquaredNormOnStream with a NULL stream are the host functions, and a stream where there is
// no GPU is refused before any write.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/cuda_device.h"
#include "kernels/cpu/half.h"
#include "optimizer_cases.h"
#include "zero/step_element.h"
#include "zero_test_util.h"

namespace zerotest {
namespace {

using coll::zero::StepScalars;

float widen(const void* grad, collDataType_t type, size_t i) {
  if (type == collFloat32) return static_cast<const float*>(grad)[i];
  const uint16_t bits = static_cast<const uint16_t*>(grad)[i];
  return type == collBfloat16 ? coll::kernels::bfloat16ToFloat(bits) : coll::kernels::halfToFloat(bits);
}

uint16_t narrow(float value, collDataType_t type) {
  return type == collBfloat16 ? coll::kernels::floatToBfloat16(value) : coll::kernels::floatToHalf(value);
}

// The library's host step, through its public entry point.
void hostStep(const collZeroStepConfig_t& config, float* master, const void* grad, collDataType_t gradType,
              float* state0, float* state1, void* paramOut, collDataType_t paramType, size_t count) {
  EXPECT_EQ(collZeroOptimizerStep(&config, master, grad, gradType, state0, state1, paramOut, paramType, count),
            collSuccess)
      << collGetLastError(nullptr);
}

// What stepKernel computes, element by element on the host: the widening, the element, the
// narrowing.
void elementStep(const collZeroStepConfig_t& config, float* master, const void* grad, collDataType_t gradType,
                 float* state0, float* state1, void* paramOut, collDataType_t paramType, size_t count) {
  const StepScalars scalars = coll::zero::stepScalarsOf(config);
  for (size_t i = 0; i < count; ++i) {
    coll::zero::stepElement(scalars, master, widen(grad, gradType, i) * scalars.gradScale, state0, state1, i);
    if (paramOut != nullptr) static_cast<uint16_t*>(paramOut)[i] = narrow(master[i], paramType);
  }
}

TEST(ZeroStepElement, MatchesTheHostStepBitForBit) {
  // 1: one element; 1037: two of the host loops' blocks and a tail.
  for (size_t count : {size_t(1), size_t(1037)}) {
    for (const NamedConfig& nc : configs()) {
      for (const Precision& precision : kPrecisions) {
        SCOPED_TRACE(caseName(nc, precision, count));
        const StepOutputs want = runSteps(hostStep, nc.config, precision, count, 5);
        const StepOutputs got = runSteps(elementStep, nc.config, precision, count, 5);
        EXPECT_EQ(outputDifferences(got, want), "");
        if (HasFailure()) return;
      }
    }
  }
}

// The element functions and the host loops must not agree by accident: a step that changes nothing
// would match itself. Each case moves every parameter.
TEST(ZeroStepElement, EveryCaseMovesTheParameters) {
  for (const NamedConfig& nc : configs()) {
    SCOPED_TRACE(nc.name);
    const StepOutputs after = runSteps(elementStep, nc.config, kPrecisions[0], 64, 1);
    for (size_t i = 0; i < 64; ++i) ASSERT_NE(after.master[i], float(initialParam(i))) << "element " << i;
  }
}

TEST(ZeroStepOnStream, ANullStreamIsTheHostStep) {
  const size_t count = 1037;
  for (const NamedConfig& nc : configs()) {
    SCOPED_TRACE(nc.name);
    collZeroStepConfig_t config = nc.config;
    config.step = 1;
    std::vector<float> masterA(count), masterB(count), s0A(count, 0.25f), s0B(count, 0.25f), s1A(count, 0.5f),
        s1B(count, 0.5f), grad(count);
    for (size_t i = 0; i < count; ++i) {
      masterA[i] = masterB[i] = float(initialParam(i));
      grad[i] = float(gradient(1, i));
    }
    ASSERT_EQ(collZeroOptimizerStep(&config, masterA.data(), grad.data(), collFloat32, s0A.data(), s1A.data(), nullptr,
                                    collFloat32, count),
              collSuccess);
    ASSERT_EQ(collZeroOptimizerStepOnStream(&config, masterB.data(), grad.data(), collFloat32, s0B.data(), s1B.data(),
                                            nullptr, collFloat32, count, nullptr),
              collSuccess)
        << collGetLastError(nullptr);
    EXPECT_EQ(firstDifference(masterB, masterA), -1);
    EXPECT_EQ(firstDifference(s0B, s0A), -1);
    EXPECT_EQ(firstDifference(s1B, s1A), -1);
  }
}

// Without a GPU a stream is refused, naming the function and the stream, before anything is
// written; bad arguments are refused first, as by the host step.
TEST(ZeroStepOnStream, AStreamWithoutAGpuIsRefusedBeforeAnyWrite) {
  std::string why;
  if (coll::cudaDeviceAvailable(&why))
    GTEST_SKIP() << "this machine has a GPU: tests/cuda/gpu_zero_step.cc checks streams there";
  const size_t count = 100;
  collZeroStepConfig_t config = adam(collZeroAdamW, 0.01);
  config.step = 1;
  TypedBuffer master(collFloat32, count), grad(collFloat32, count), s0(collFloat32, count), s1(collFloat32, count);
  const std::vector<unsigned char> before = master.bytes();
  void* stream = reinterpret_cast<void*>(0x1000);
  collResult_t rc = collZeroOptimizerStepOnStream(&config, static_cast<float*>(master.data()), grad.data(), collFloat32,
                                                  static_cast<float*>(s0.data()), static_cast<float*>(s1.data()),
                                                  nullptr, collFloat32, count, stream);
  EXPECT_EQ(rc, collInvalidUsage);
  const std::string message = collGetLastError(nullptr);
  EXPECT_NE(message.find("collZeroOptimizerStepOnStream"), std::string::npos) << message;
  EXPECT_NE(message.find("stream"), std::string::npos) << message;
  EXPECT_NE(message.find("NULL stream"), std::string::npos) << message;
  EXPECT_EQ(master.bytes(), before) << "master was written";
  // A bad argument is named before the stream is looked at.
  config.lr = -1.0;
  rc = collZeroOptimizerStepOnStream(&config, static_cast<float*>(master.data()), grad.data(), collFloat32,
                                     static_cast<float*>(s0.data()), static_cast<float*>(s1.data()), nullptr,
                                     collFloat32, count, stream);
  EXPECT_EQ(invalidArgumentProblem(rc, {"collZeroOptimizerStepOnStream", "config->lr"}), "");
}

TEST(ZeroSquaredNormOnStream, ANullStreamIsTheHostNorm) {
  for (collDataType_t type : {collFloat32, collFloat16, collBfloat16}) {
    SCOPED_TRACE(typeName(type));
    TypedBuffer data(type, 4099);
    for (size_t i = 0; i < data.count(); ++i) data.set(i, gradient(3, i) * 8.0);
    double want = 0, got = -1;
    int wantFlag = -1, gotFlag = -1;
    ASSERT_EQ(collZeroSquaredNorm(data.data(), type, data.count(), &want, &wantFlag), collSuccess);
    ASSERT_EQ(collZeroSquaredNormOnStream(data.data(), type, data.count(), &got, &gotFlag, nullptr), collSuccess)
        << collGetLastError(nullptr);
    EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << got << " against " << want;
    EXPECT_EQ(gotFlag, wantFlag);
    EXPECT_GT(want, 0.0);
  }
}

TEST(ZeroSquaredNormOnStream, AStreamWithoutAGpuIsRefusedBeforeAnyWrite) {
  if (coll::cudaDeviceAvailable())
    GTEST_SKIP() << "this machine has a GPU: tests/cuda/gpu_zero_step.cc checks streams there";
  TypedBuffer data(collFloat32, 10);
  double sum = 7.0;
  int flag = 7;
  const collResult_t rc =
      collZeroSquaredNormOnStream(data.data(), collFloat32, 10, &sum, &flag, reinterpret_cast<void*>(0x1000));
  EXPECT_EQ(rc, collInvalidUsage);
  const std::string message = collGetLastError(nullptr);
  EXPECT_NE(message.find("collZeroSquaredNormOnStream"), std::string::npos) << message;
  EXPECT_EQ(sum, 7.0);
  EXPECT_EQ(flag, 7);
  // The arguments' own checks come first.
  EXPECT_EQ(invalidArgumentProblem(
                collZeroSquaredNormOnStream(data.data(), collInt32, 10, &sum, &flag, reinterpret_cast<void*>(0x1000)),
                {"collZeroSquaredNormOnStream", "datatype"}),
            "");
}

}  // namespace
}  // namespace zerotest
