// collZeroOptimizerStep over several steps against a double-precision scalar reference that
// follows torch.optim's single-tensor Adam, AdamW and SGD, at counts that end inside and on the
// loops' 256-element blocks, with float32, half and bfloat16 gradients, gradScale, and the
// low-precision copy (paramOut) checked bit for bit against the master rounded to nearest even
// here; and the host step over several threads against one, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "optimizer_cases.h"
#include "zero/host_step.h"
#include "zero/step_threads.h"
#include "zero_test_util.h"

namespace zerotest {
namespace {

// One element's state in double precision; m is exp_avg (Adam) or the momentum buffer (SGD).
struct RefElement {
  double p, m = 0.0, v = 0.0;
};

// torch.optim's single-tensor step for one element; g is the gradient as stored (before gradScale).
void referenceStep(const collZeroStepConfig_t& c, RefElement& e, double g) {
  g *= c.gradScale;
  const double t = double(c.step);
  if (c.optimizer == collZeroSgd) {
    g += c.weightDecay * e.p;
    if (c.momentum != 0.0) {
      e.m = c.step == 1 ? g : c.momentum * e.m + (1.0 - c.dampening) * g;
      g = c.nesterov ? g + c.momentum * e.m : e.m;
    }
    e.p -= c.lr * g;
    return;
  }
  if (c.optimizer == collZeroAdamW) {
    e.p *= 1.0 - c.lr * c.weightDecay;
  } else {
    g += c.weightDecay * e.p;
  }
  e.m = c.beta1 * e.m + (1.0 - c.beta1) * g;
  e.v = c.beta2 * e.v + (1.0 - c.beta2) * g * g;
  const double denom = std::sqrt(e.v) / std::sqrt(1.0 - std::pow(c.beta2, t)) + c.eps;
  e.p -= c.lr / (1.0 - std::pow(c.beta1, t)) * e.m / denom;
}

bool close(double got, double want, double floor) {
  return std::fabs(got - want) <= 1e-5 * std::max(std::fabs(want), floor);
}

uint16_t rounded(float master, collDataType_t type) {
  return type == collBfloat16 ? toBfloat16(master) : toHalf(master);
}

// Runs `steps` steps of `config` on `count` elements and compares everything after each one.
void runAndCompare(collZeroStepConfig_t config, const Precision& precision, size_t count, int steps) {
  const bool adamFamily = config.optimizer != collZeroSgd;
  const bool sgdState = !adamFamily && config.momentum != 0.0;
  TypedBuffer master(collFloat32, count), state0(collFloat32, count), state1(collFloat32, count);
  TypedBuffer grad(precision.gradType, count);
  TypedBuffer paramOut(precision.paramType == collFloat32 ? collFloat16 : precision.paramType, count);
  std::vector<RefElement> ref(count);
  for (size_t i = 0; i < count; ++i) {
    master.set(i, initialParam(i));
    ref[i].p = master.get(i);
    if (adamFamily) {  // torch starts exp_avg and exp_avg_sq at zero; SGD's buffer is set on step 1
      state0.set(i, 0.0);
      state1.set(i, 0.0);
    }
  }
  const std::vector<unsigned char> state0Initial = state0.bytes(), state1Initial = state1.bytes(),
                                   paramOutInitial = paramOut.bytes();
  float* state0Arg = adamFamily || sgdState ? static_cast<float*>(state0.data()) : nullptr;
  float* state1Arg = adamFamily ? static_cast<float*>(state1.data()) : nullptr;
  void* paramOutArg = precision.paramType == collFloat32 ? nullptr : paramOut.data();
  config.gradScale = 1.0 / precision.lossScale;
  for (int s = 1; s <= steps; ++s) {
    config.step = s;
    SCOPED_TRACE("step " + std::to_string(s));
    for (size_t i = 0; i < count; ++i) grad.set(i, gradient(s, i) * precision.lossScale);
    const std::vector<unsigned char> gradBefore = grad.bytes();
    ASSERT_EQ(collZeroOptimizerStep(&config, static_cast<float*>(master.data()), grad.data(), precision.gradType,
                                    state0Arg, state1Arg, paramOutArg, precision.paramType, count),
              collSuccess)
        << collGetLastError(nullptr);
    for (size_t i = 0; i < count; ++i) referenceStep(config, ref[i], grad.get(i));
    for (size_t i = 0; i < count; ++i) {
      ASSERT_TRUE(close(master.get(i), ref[i].p, 1.0))
          << "master[" << i << "] = " << master.get(i) << ", reference " << ref[i].p;
      if (adamFamily || sgdState) {
        ASSERT_TRUE(close(state0.get(i), ref[i].m, 0.02))
            << "state0[" << i << "] = " << state0.get(i) << ", reference " << ref[i].m;
      }
      if (adamFamily) {
        ASSERT_TRUE(close(state1.get(i), ref[i].v, 4e-4))
            << "state1[" << i << "] = " << state1.get(i) << ", reference " << ref[i].v;
      }
      if (paramOutArg != nullptr) {
        const uint16_t got = static_cast<const uint16_t*>(paramOut.data())[i];
        const uint16_t want = rounded(static_cast<const float*>(master.data())[i], precision.paramType);
        ASSERT_EQ(got, want) << "paramOut[" << i << "] is not master " << master.get(i) << " rounded";
      }
    }
    ASSERT_TRUE(grad.bytes() == gradBefore) << "the gradients were written";
    ASSERT_TRUE(master.guardIntact() && state0.guardIntact() && state1.guardIntact() && paramOut.guardIntact())
        << "written past count " << count;
    ASSERT_TRUE(adamFamily || state1.bytes() == state1Initial) << "SGD wrote state1";
    ASSERT_TRUE(adamFamily || sgdState || state0.bytes() == state0Initial) << "SGD without momentum wrote state0";
    ASSERT_TRUE(paramOutArg != nullptr || paramOut.bytes() == paramOutInitial) << "paramOut was written";
  }
}

class ZeroOptimizerStep : public ::testing::TestWithParam<size_t> {};

TEST_P(ZeroOptimizerStep, MatchesTorchReference) {
  for (const NamedConfig& nc : configs()) {
    for (const Precision& precision : kPrecisions) {
      SCOPED_TRACE(std::string(nc.name) + ", grad " + typeName(precision.gradType) + " scaled by " +
                   std::to_string(precision.lossScale) + ", paramOut " +
                   (precision.paramType == collFloat32 ? "none" : typeName(precision.paramType)));
      runAndCompare(nc.config, precision, GetParam(), 5);
      if (HasFatalFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Counts, ZeroOptimizerStep, ::testing::Values(1, 7, 255, 256, 257, 512, 513, 1037, 4099),
                         [](const ::testing::TestParamInfo<size_t>& info) { return std::to_string(info.param); });

// Steps are elementwise: a shard updated in two calls at any split equals one call, bit for bit.
TEST(ZeroOptimizerStepSplit, AnySplitEqualsOneCall) {
  const size_t count = 1037;
  for (const NamedConfig& nc : configs()) {
    SCOPED_TRACE(nc.name);
    std::vector<float> masterA(count), masterB(count), stateA(2 * count, 0.0f), stateB(2 * count, 0.0f);
    std::vector<uint16_t> outA(count), outB(count);
    std::vector<float> grad(count);
    for (size_t i = 0; i < count; ++i) masterA[i] = masterB[i] = float(initialParam(i));
    collZeroStepConfig_t c = nc.config;
    for (long long s = 1; s <= 3; ++s) {
      c.step = s;
      for (size_t i = 0; i < count; ++i) grad[i] = float(gradient(s, i));
      ASSERT_EQ(collZeroOptimizerStep(&c, masterA.data(), grad.data(), collFloat32, stateA.data(),
                                      stateA.data() + count, outA.data(), collBfloat16, count),
                collSuccess);
      const size_t split = s == 1 ? 700 : s == 2 ? 1 : 512;
      for (auto piece : {std::make_pair(size_t(0), split), std::make_pair(split, count)}) {
        const size_t at = piece.first, n = piece.second - piece.first;
        ASSERT_EQ(collZeroOptimizerStep(&c, masterB.data() + at, grad.data() + at, collFloat32, stateB.data() + at,
                                        stateB.data() + count + at, outB.data() + at, collBfloat16, n),
                  collSuccess);
      }
    }
    EXPECT_EQ(std::memcmp(masterA.data(), masterB.data(), count * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(stateA.data(), stateB.data(), stateA.size() * sizeof(float)), 0);
    EXPECT_EQ(outA, outB);
  }
}

// paramOut rounds to nearest even, ties included, and overflows to infinity like a cast would.
TEST(ZeroOptimizerStepRounding, ParamOutRoundsMasterToNearestEven) {
  const std::vector<float> masters = {bitsToFloat(0x3f808000u),
                                      bitsToFloat(0x3f818000u),
                                      bitsToFloat(0x3f808001u),
                                      bitsToFloat(0xbf808000u),
                                      bitsToFloat(0x7f7f8000u),
                                      bitsToFloat(0x7f7fffffu),
                                      1e-40f,
                                      1.00048828125f,
                                      1.00146484375f,
                                      65504.0f,
                                      65519.0f,
                                      65520.0f,
                                      -70000.0f,
                                      0x1p-24f,
                                      0x1p-25f,
                                      0x3p-26f,
                                      0.0f,
                                      -0.0f,
                                      3.14159265f};
  collZeroStepConfig_t c = sgd(0.0, 0.0, 0, 0.0);
  c.lr = 0.0;  // the master stays as it is: only the rounding is under test
  c.step = 1;
  for (collDataType_t type : {collBfloat16, collFloat16}) {
    SCOPED_TRACE(typeName(type));
    std::vector<float> master = masters, grad(masters.size(), 1.0f);
    std::vector<uint16_t> out(masters.size(), 0xa7a7);
    ASSERT_EQ(collZeroOptimizerStep(&c, master.data(), grad.data(), collFloat32, nullptr, nullptr, out.data(), type,
                                    master.size()),
              collSuccess)
        << collGetLastError(nullptr);
    for (size_t i = 0; i < masters.size(); ++i) {
      EXPECT_EQ(floatToBits(master[i]), floatToBits(masters[i])) << i;
      EXPECT_EQ(out[i], rounded(masters[i], type))
          << "master " << masters[i] << " (bits " << std::hex << floatToBits(masters[i]) << ")";
    }
  }
  EXPECT_EQ(toBfloat16(bitsToFloat(0x3f808000u)), 0x3f80);  // the test's own rounding, spot-checked
  EXPECT_EQ(toBfloat16(bitsToFloat(0x3f818000u)), 0x3f82);
  EXPECT_EQ(toBfloat16(bitsToFloat(0x7f7f8000u)), 0x7f80);
  EXPECT_EQ(toHalf(65520.0f), 0x7c00);
  EXPECT_EQ(toHalf(1.00048828125f), 0x3c00);
}

// The host step over kThreads threads (zero/step_threads.h): the shard cut into pieces, one a thread.
using coll::zero::kElementsPerThread;

template <int kThreads>
void stepWith(const collZeroStepConfig_t& config, float* master, const void* grad, collDataType_t gradType,
              float* state0, float* state1, void* paramOut, collDataType_t paramType, size_t count) {
  coll::zero::stepOnHost(config, master, grad, gradType, state0, state1, paramOut, paramType, count, kThreads);
}

TEST(ZeroOptimizerStepThreads, AnyThreadCountGivesOneThreadsBits) {
  // Counts that end inside and on the pieces' alignment, with a piece per thread.
  for (size_t count : {4 * kElementsPerThread + 7, 3 * kElementsPerThread + 1024}) {
    for (const NamedConfig& nc : configs()) {
      for (const Precision& precision : kPrecisions) {
        SCOPED_TRACE(caseName(nc, precision, count));
        const StepOutputs want = runSteps(stepWith<1>, nc.config, precision, count, 2);
        EXPECT_EQ(outputDifferences(runSteps(stepWith<2>, nc.config, precision, count, 2), want), "");
        EXPECT_EQ(outputDifferences(runSteps(stepWith<3>, nc.config, precision, count, 2), want), "");
        if (HasFailure()) return;
      }
    }
  }
}

TEST(ZeroOptimizerStepThreads, TwoStepsAtOnceEachGetTheirBits) {
  const size_t count = 4 * kElementsPerThread + 99;
  const NamedConfig nc = configs().front();
  const Precision& precision = kPrecisions[1];
  const StepOutputs want = runSteps(stepWith<1>, nc.config, precision, count, 3);
  std::vector<std::string> problems(2);
  std::vector<std::thread> callers;
  for (int c = 0; c < 2; ++c)
    callers.emplace_back([&, c] {
      for (int round = 0; round < 5; ++round)
        problems[c] += outputDifferences(runSteps(stepWith<4>, nc.config, precision, count, 3), want);
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(problems[0], "");
  EXPECT_EQ(problems[1], "");
}

// Refusals name the function and the value, and leave every buffer alone.
TEST(ZeroOptimizerStepErrors, BadArgumentsAreRefusedBeforeAnyWrite) {
  const size_t count = 5;
  struct Case {
    const char* name;
    std::vector<std::string> pieces;
    std::function<void(collZeroStepConfig_t&)> edit;
    bool nullConfig = false, nullMaster = false, nullGrad = false, nullState0 = false, nullState1 = false;
    collDataType_t gradType = collFloat32, paramType = collBfloat16;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<Case> cases = {
      {"NULL config", {"config is NULL"}, {}, true},
      {"step 0", {"step 0"}, [](collZeroStepConfig_t& c) { c.step = 0; }},
      {"step -5", {"step -5"}, [](collZeroStepConfig_t& c) { c.step = -5; }},
      {"optimizer 3", {"optimizer 3"}, [](collZeroStepConfig_t& c) { c.optimizer = collZeroNumOptimizers; }},
      {"optimizer -1", {"optimizer -1"}, [](collZeroStepConfig_t& c) { c.optimizer = collZeroOptimizer_t(-1); }},
      {"eps 0", {"eps 0"}, [](collZeroStepConfig_t& c) { c.eps = 0.0; }},
      {"eps -1e-8", {"eps -1e-08"}, [](collZeroStepConfig_t& c) { c.eps = -1e-8; }},
      {"lr NaN", {"lr nan"}, [=](collZeroStepConfig_t& c) { c.lr = nan; }},
      {"lr inf", {"lr inf"}, [=](collZeroStepConfig_t& c) { c.lr = inf; }},
      {"lr -0.5", {"lr -0.5"}, [](collZeroStepConfig_t& c) { c.lr = -0.5; }},
      {"beta1 1", {"beta1 1"}, [](collZeroStepConfig_t& c) { c.beta1 = 1.0; }},
      {"beta2 -0.1", {"beta2 -0.1"}, [](collZeroStepConfig_t& c) { c.beta2 = -0.1; }},
      {"gradScale inf", {"gradScale inf"}, [=](collZeroStepConfig_t& c) { c.gradScale = inf; }},
      {"gradScale NaN", {"gradScale nan"}, [=](collZeroStepConfig_t& c) { c.gradScale = nan; }},
      {"gradType int32", {"gradType 2"}, {}, false, false, false, false, false, collInt32},
      {"gradType float64", {"gradType 8"}, {}, false, false, false, false, false, collFloat64},
      {"paramType float32", {"paramType 7"}, {}, false, false, false, false, false, collFloat32, collFloat32},
      {"NULL master", {"master is NULL", "5"}, {}, false, true},
      {"NULL grad", {"grad is NULL"}, {}, false, false, true},
      {"Adam NULL state0", {"state0 is NULL"}, {}, false, false, false, true},
      {"Adam NULL state1", {"state1 is NULL"}, {}, false, false, false, false, true},
      {"SGD momentum NULL state0",
       {"state0 is NULL"},
       [](collZeroStepConfig_t& c) {
         c = sgd(0.9, 0.0, 0, 0.0);
         c.step = 2;
       },
       false,
       false,
       false,
       true},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    collZeroStepConfig_t c = adam(collZeroAdam, 0.01);
    c.step = 3;
    if (k.edit) k.edit(c);
    TypedBuffer master(collFloat32, count), grad(collFloat32, count), s0(collFloat32, count), s1(collFloat32, count),
        out(collBfloat16, count);
    for (size_t i = 0; i < count; ++i) master.set(i, 1.0), grad.set(i, 0.5), s0.set(i, 0.1), s1.set(i, 0.2);
    const auto before = master.bytes(), s0Before = s0.bytes(), s1Before = s1.bytes(), outBefore = out.bytes();
    const collResult_t rc = collZeroOptimizerStep(
        k.nullConfig ? nullptr : &c, k.nullMaster ? nullptr : static_cast<float*>(master.data()),
        k.nullGrad ? nullptr : grad.data(), k.gradType, k.nullState0 ? nullptr : static_cast<float*>(s0.data()),
        k.nullState1 ? nullptr : static_cast<float*>(s1.data()), out.data(), k.paramType, count);
    std::vector<std::string> pieces = {"collZeroOptimizerStep"};
    pieces.insert(pieces.end(), k.pieces.begin(), k.pieces.end());
    for (const auto& piece : pieces) EXPECT_EQ(invalidArgumentProblem(rc, {piece}), "");
    EXPECT_TRUE(master.bytes() == before && s0.bytes() == s0Before && s1.bytes() == s1Before &&
                out.bytes() == outBefore)
        << "a buffer was written by a refused call";
  }
}

// Arrays that share bytes are refused naming both, whatever pair it is, and nothing is written;
// arrays that only touch end to start are separate, and a state SGD without momentum does not use
// may lie anywhere.
TEST(ZeroOptimizerStepErrors, OverlappingArraysAreRefused) {
  const size_t count = 8;
  // One float32 arena: master [0, 8), state0 [8, 16), state1 [16, 24), grad [24, 32), paramOut
  // (bf16) [32, 36), moved by each case to where it overlaps.
  struct Case {
    const char* name;
    std::vector<std::string> pieces;
    size_t master, state0, state1, grad, paramOut;
    collDataType_t gradType;
  };
  const std::vector<Case> cases = {
      {"grad is master", {"master", "grad", "overlap"}, 0, 8, 16, 0, 32, collFloat32},
      {"state0 over grad's last element", {"grad", "state0"}, 0, 31, 16, 24, 32, collFloat32},
      {"state1 over bf16 grad's last two", {"grad", "state1"}, 0, 8, 27, 24, 32, collBfloat16},
      {"state0 is state1", {"state0", "state1"}, 0, 8, 8, 24, 32, collFloat32},
      {"paramOut over grad", {"grad", "paramOut"}, 0, 8, 16, 24, 27, collFloat32},
      {"paramOut at master's end", {"master", "paramOut"}, 0, 8, 16, 24, 7, collFloat32},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    std::vector<float> arena(40);
    for (size_t i = 0; i < arena.size(); ++i) arena[i] = 0.25f * float(i + 1);
    const std::vector<float> before = arena;
    collZeroStepConfig_t c = adam(collZeroAdamW, 0.01);
    c.step = 2;
    const collResult_t rc = collZeroOptimizerStep(&c, &arena[k.master], &arena[k.grad], k.gradType, &arena[k.state0],
                                                  &arena[k.state1], &arena[k.paramOut], collBfloat16, count);
    std::vector<std::string> pieces = {"collZeroOptimizerStep", "expected separate arrays"};
    pieces.insert(pieces.end(), k.pieces.begin(), k.pieces.end());
    for (const auto& piece : pieces) EXPECT_EQ(invalidArgumentProblem(rc, {piece}), "");
    EXPECT_TRUE(arena == before) << "a refused call wrote into its arrays";
  }
  std::vector<float> arena(40, 0.5f);
  collZeroStepConfig_t c = adam(collZeroAdamW, 0.01);
  c.step = 1;
  EXPECT_EQ(collZeroOptimizerStep(&c, &arena[0], &arena[8], collFloat32, &arena[16], &arena[24], &arena[32],
                                  collBfloat16, count),
            collSuccess)
      << collGetLastError(nullptr);
  // A bf16 gradient spans 2 bytes an element: state1 may start right after its 16 bytes.
  EXPECT_EQ(collZeroOptimizerStep(&c, &arena[0], &arena[24], collBfloat16, &arena[8], &arena[28], nullptr, collFloat32,
                                  count),
            collSuccess)
      << collGetLastError(nullptr);
  c = sgd(0.0, 0.0, 0, 0.01);
  c.step = 1;
  c.eps = 0.0;  // not used by SGD
  EXPECT_EQ(
      collZeroOptimizerStep(&c, &arena[0], &arena[8], collFloat32, &arena[0], &arena[0], nullptr, collFloat32, count),
      collSuccess)
      << collGetLastError(nullptr);
}

// What needs no buffer may be NULL: count 0, SGD's state without momentum, paramOut.
TEST(ZeroOptimizerStepErrors, OptionalBuffersMayBeNull) {
  collZeroStepConfig_t c = adam(collZeroAdamW, 0.01);
  c.step = 1;
  EXPECT_EQ(collZeroOptimizerStep(&c, nullptr, nullptr, collFloat16, nullptr, nullptr, nullptr, collFloat32, 0),
            collSuccess)
      << collGetLastError(nullptr);
  c = sgd(0.0, 0.0, 0, 0.01);
  c.step = 4;
  c.eps = 0.0;  // not used by SGD
  float master[3] = {1, 2, 3}, grad[3] = {1, 1, 1};
  ASSERT_EQ(collZeroOptimizerStep(&c, master, grad, collFloat32, nullptr, nullptr, nullptr, collFloat32, 3),
            collSuccess)
      << collGetLastError(nullptr);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(master[i], float((i + 1) - 0.1 * (1 + 0.01 * (i + 1))));
}

}  // namespace
}  // namespace zerotest
