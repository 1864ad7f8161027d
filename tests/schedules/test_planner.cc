// The planner: one-shot only when available and the input fits, COLL_ALGO overrides honoured or
// rejected with collInvalidUsage, the step size within half a FIFO, and buildSchedule's schedules
// for every collective and algorithm simulated end to end.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "src/algorithms/algorithms.h"
#include "src/algorithms/direct_read.h"
#include "src/params.h"
#include "src/plan/planner.h"
#include "tests/schedules/simulator.h"

namespace coll {
namespace {

const CollType kPlannedTypes[] = {CollType::kAllReduce, CollType::kBroadcast,     CollType::kReduce,
                                  CollType::kAllGather, CollType::kReduceScatter, CollType::kGather,
                                  CollType::kScatter,   CollType::kAllToAll,      CollType::kBarrier};

CollCall makeCall(CollType type, size_t count, size_t elemSize = 4) {
  CollCall call;
  call.type = type;
  call.count = type == CollType::kBarrier ? 0 : count;
  call.datatype = elemSize == 1 ? collUint8 : elemSize == 2 ? collFloat16 : elemSize == 8 ? collFloat64 : collFloat32;
  call.elemSize = elemSize;
  call.op = collSum;
  return call;
}

PlanContext makeContext(int nranks, bool oneshot) {
  PlanContext ctx;
  ctx.nranks = nranks;
  ctx.oneshotAvailable = oneshot;
  ctx.oneshotBytes = 64 << 10;
  ctx.slotBytes = 128 << 10;
  ctx.fifoDepth = 8;
  return ctx;
}

std::string what(CollType type, int n, size_t count) {
  return std::string(collTypeName(type)) + " n=" + std::to_string(n) + " count=" + std::to_string(count);
}

TEST(Planner, PicksOneShotForTinyInputsWhenAvailable) {
  for (CollType type : kPlannedTypes)
    for (int n = 2; n <= 16; ++n)
      for (size_t count : {1, 2, 16}) {
        Plan plan = planCall(makeCall(type, count), makeContext(n, true));
        EXPECT_EQ(plan.algo, Algo::kOneShot) << what(type, n, count) << ": got " << algoName(plan.algo);
      }
}

// 2-rank broadcasts, all-to-alls, scatters and gathers from 32 KiB of input up to COLL_DIRECT_READ_BYTES take
// direct reads outright where ranks can read each other's memory, and nowhere else: not below the window (one-shot or a
// pipeline), not from COLL_DIRECT_READ_BYTES on (the tuner's pair), not with direct reads off, not on device memory,
// and never another collective.
TEST(Planner, TwoRankCopiesTakeDirectReadsInTheirWindowOnly) {
  PlanContext ctx = makeContext(4, true);
  ctx.directReadAvailable = true;
  ctx.directReadBytes = 1 << 20;
  for (int n = 2; n <= 16; ++n) {
    ctx.nranks = n;
    for (CollType type : {CollType::kBroadcast, CollType::kAllToAll, CollType::kScatter, CollType::kGather}) {
      // float32 elements per block: an all-to-all's and a scatter's input is n blocks.
      const bool blocked = type == CollType::kAllToAll || type == CollType::kScatter;
      const size_t blocks = blocked ? static_cast<size_t>(n) : 1;
      const size_t window = kDirectReadTwoRankBytes / 4 / blocks;
      const size_t large = ctx.directReadBytes / 4 / blocks;
      if (n > 2) {  // more ranks keep the usual plan
        EXPECT_NE(planCall(makeCall(type, window * 2), ctx).algo, Algo::kDirectRead) << what(type, n, window * 2);
        continue;
      }
      for (size_t count : {window, window * 2, large - 1}) {
        Plan plan = planCall(makeCall(type, count), ctx);
        EXPECT_EQ(plan.algo, Algo::kDirectRead) << what(type, n, count);
        EXPECT_EQ(plan.alternative, Algo::kAuto) << what(type, n, count);
      }
      EXPECT_NE(planCall(makeCall(type, window - 1), ctx).algo, Algo::kDirectRead) << what(type, n, window - 1);
      Plan largePlan = planCall(makeCall(type, large), ctx);
      EXPECT_NE(largePlan.algo, Algo::kDirectRead) << what(type, n, large);
      EXPECT_EQ(largePlan.alternative, Algo::kDirectRead) << what(type, n, large);
      PlanContext off = ctx;
      off.directReadBytes = 0;
      EXPECT_NE(planCall(makeCall(type, window * 2), off).algo, Algo::kDirectRead) << what(type, n, window * 2);
      PlanContext unreadable = ctx;
      unreadable.directReadAvailable = false;
      EXPECT_NE(planCall(makeCall(type, window * 2), unreadable).algo, Algo::kDirectRead) << what(type, n, window * 2);
      PlanContext device = ctx;
      device.deviceMemory = true;
      EXPECT_NE(planCall(makeCall(type, window * 2), device).algo, Algo::kDirectRead) << what(type, n, window * 2);
    }
    const size_t window = kDirectReadTwoRankBytes / 4;
    for (CollType type : {CollType::kAllReduce, CollType::kAllGather, CollType::kReduceScatter, CollType::kReduce})
      EXPECT_NE(planCall(makeCall(type, window * 2), ctx).algo, Algo::kDirectRead) << what(type, n, window * 2);
  }
}

// A 2-rank all-gather from 32 KiB of input is offered direct reads as the tuner's alternative (the
// faster of ring and direct reads depends on whether the cores share a cache), below the window
// and on more ranks only from COLL_DIRECT_READ_BYTES.
TEST(Planner, TwoRankAllGatherOffersDirectReadsToTheTunerFrom32KiB) {
  PlanContext ctx = makeContext(2, true);
  ctx.directReadAvailable = true;
  ctx.directReadBytes = 1 << 20;
  const size_t window = kDirectReadTwoRankBytes / 4;  // float32 elements per rank
  const size_t large = ctx.directReadBytes / 4;
  for (size_t count : {window, window * 2, large - 1, large}) {
    Plan plan = planCall(makeCall(CollType::kAllGather, count), ctx);
    EXPECT_NE(plan.algo, Algo::kDirectRead) << what(CollType::kAllGather, 2, count);
    EXPECT_EQ(plan.alternative, Algo::kDirectRead) << what(CollType::kAllGather, 2, count);
  }
  EXPECT_NE(planCall(makeCall(CollType::kAllGather, window - 1), ctx).alternative, Algo::kDirectRead);
  PlanContext four = ctx;
  four.nranks = 4;
  EXPECT_NE(planCall(makeCall(CollType::kAllGather, window * 2), four).alternative, Algo::kDirectRead);
  EXPECT_EQ(planCall(makeCall(CollType::kAllGather, large), four).alternative, Algo::kDirectRead);
  PlanContext off = ctx;
  off.directReadBytes = 0;
  EXPECT_NE(planCall(makeCall(CollType::kAllGather, window * 2), off).alternative, Algo::kDirectRead);
}

TEST(Planner, NeverOneShotWhenUnavailable) {
  for (CollType type : kPlannedTypes)
    for (int n = 1; n <= 16; ++n)
      for (size_t count : {1, 1000, 1 << 20}) {
        Plan plan = planCall(makeCall(type, count), makeContext(n, false));
        EXPECT_NE(plan.algo, Algo::kOneShot) << what(type, n, count);
        EXPECT_NE(plan.algo, Algo::kAuto) << what(type, n, count);
      }
}

// A small all-gather-v or reduce-scatter-v takes the one-shot path where every rank has a core;
// where ranks outnumber cores, only when most ranks' blocks hold elements (the ring skips the
// steps of empty blocks), the same choice on every rank since every rank has the same counts.
TEST(Planner, CrowdedVariableCountsTakeOneShotWhereMostBlocksAreFilled) {
  for (CollType type : {CollType::kAllGatherV, CollType::kReduceScatterV})
    for (int n : {2, 3, 4, 8})
      for (int filled = 0; filled <= n; ++filled)
        for (bool crowded : {false, true}) {
          std::vector<size_t> recvcounts(static_cast<size_t>(n), 0);
          for (int p = 0; p < filled; ++p) recvcounts[static_cast<size_t>(n - 1 - p)] = 3;
          VariableCounts counts;
          counts.recvcounts = recvcounts.data();
          counts.filledBlocks = static_cast<size_t>(filled);
          CollCall call = makeCall(type, 3 * static_cast<size_t>(filled));
          call.counts = &counts;
          PlanContext ctx = makeContext(n, true);
          ctx.ranksOutnumberCores = crowded;
          const bool oneshot = !crowded || 2 * filled > n;
          const std::string where =
              what(type, n, call.count) + " filled=" + std::to_string(filled) + (crowded ? " crowded" : "");
          EXPECT_EQ(planCall(call, ctx).algo, oneshot ? Algo::kOneShot : Algo::kRing) << where;
        }
}

TEST(Planner, NeverOneShotWhenTheInputDoesNotFit) {
  PlanContext ctx = makeContext(4, true);
  for (CollType type : kPlannedTypes) {
    if (type == CollType::kBarrier) continue;
    for (int n = 1; n <= 16; ++n) {
      ctx.nranks = n;
      // One element past the one-shot buffer (per rank: n blocks for reduce-scatter, scatter and
      // all-to-all, whose input is n times count).
      size_t count = ctx.oneshotBytes / 4 + 1;
      CollCall call = makeCall(type, count);
      ASSERT_GT(oneshotInputBytes(call, n), ctx.oneshotBytes);
      EXPECT_NE(planCall(call, ctx).algo, Algo::kOneShot) << what(type, n, count);
      if (type == CollType::kReduceScatter || type == CollType::kScatter || type == CollType::kAllToAll) {
        if (n == 1) continue;
        size_t perRank = ctx.oneshotBytes / 4 / n + 1;  // count fits, n x count does not
        CollCall wide = makeCall(type, perRank);
        ASSERT_GT(oneshotInputBytes(wide, n), ctx.oneshotBytes);
        EXPECT_NE(planCall(wide, ctx).algo, Algo::kOneShot) << what(type, n, perRank);
      }
    }
  }
}

TEST(Planner, DefaultAlgorithms) {
  struct Expect {
    CollType type;
    Algo algo;
  };
  for (int n = 2; n <= 16; ++n) {
    PlanContext ctx = makeContext(n, false);
    for (Expect e : {Expect{CollType::kAllReduce, Algo::kRing}, Expect{CollType::kAllGather, Algo::kRing},
                     Expect{CollType::kReduceScatter, Algo::kRing}, Expect{CollType::kReduce, Algo::kTree},
                     Expect{CollType::kGather, Algo::kDirect}, Expect{CollType::kScatter, Algo::kDirect},
                     Expect{CollType::kAllToAll, Algo::kPairwise}, Expect{CollType::kBarrier, Algo::kTree}})
      EXPECT_EQ(planCall(makeCall(e.type, 1000), ctx).algo, e.algo) << what(e.type, n, 1000);
    // Broadcast: chain on up to 3 ranks or from 1 MiB, else the binomial tree.
    EXPECT_EQ(planCall(makeCall(CollType::kBroadcast, 1000), ctx).algo, n <= 3 ? Algo::kChain : Algo::kTree);
    EXPECT_EQ(planCall(makeCall(CollType::kBroadcast, 1 << 18), ctx).algo, Algo::kChain);
  }
}

TEST(Planner, RespectsOverrides) {
  Algo overrides[static_cast<int>(CollType::kCount)] = {};
  overrides[static_cast<int>(CollType::kAllReduce)] = Algo::kTree;
  overrides[static_cast<int>(CollType::kBroadcast)] = Algo::kChain;
  overrides[static_cast<int>(CollType::kReduce)] = Algo::kOneShot;
  overrides[static_cast<int>(CollType::kAllGather)] = Algo::kRing;
  PlanContext ctx = makeContext(8, true);
  ctx.overrides = overrides;
  // Tiny inputs would go one-shot; large broadcasts on 8 ranks would not go to the chain.
  EXPECT_EQ(planCall(makeCall(CollType::kAllReduce, 1), ctx).algo, Algo::kTree);
  EXPECT_EQ(planCall(makeCall(CollType::kAllReduce, 1 << 20), ctx).algo, Algo::kTree);
  EXPECT_EQ(planCall(makeCall(CollType::kBroadcast, 16), ctx).algo, Algo::kChain);
  EXPECT_EQ(planCall(makeCall(CollType::kAllGather, 1), ctx).algo, Algo::kRing);
  EXPECT_EQ(planCall(makeCall(CollType::kReduce, 100), ctx).algo, Algo::kOneShot);
  // Collectives without an override keep the automatic choice.
  EXPECT_EQ(planCall(makeCall(CollType::kGather, 1), ctx).algo, Algo::kOneShot);
  EXPECT_EQ(planCall(makeCall(CollType::kGather, 1 << 20), ctx).algo, Algo::kDirect);

  // From a COLL_ALGO string, as the communicator gets them.
  Algo parsed[static_cast<int>(CollType::kCount)] = {};
  parseAlgoOverrides("allreduce:tree,broadcast:chain", parsed);
  ctx.overrides = parsed;
  EXPECT_EQ(planCall(makeCall(CollType::kAllReduce, 1), ctx).algo, Algo::kTree);
  EXPECT_EQ(planCall(makeCall(CollType::kBroadcast, 1), ctx).algo, Algo::kChain);
  EXPECT_EQ(planCall(makeCall(CollType::kReduce, 1), ctx).algo, Algo::kOneShot);
}

// An algorithm named alone applies to the collectives it serves and, among their calls, to those it
// can run; the others choose as usual. Named with a collective it stays strict.
TEST(Planner, AlgorithmAloneAppliesWhereItRuns) {
  constexpr int kTypes = static_cast<int>(CollType::kCount);
  Algo parsed[kTypes] = {};
  bool whereRunnable[kTypes] = {};
  parseAlgoOverrides("bruck", parsed, whereRunnable);
  PlanContext ctx = makeContext(4, true);
  ctx.overrides = parsed;
  ctx.overridesWhereRunnable = whereRunnable;
  EXPECT_EQ(planCall(makeCall(CollType::kAllGather, 1000), ctx).algo, Algo::kBruck);
  for (CollType type : {CollType::kBarrier, CollType::kAllReduce, CollType::kBroadcast, CollType::kGather}) {
    EXPECT_EQ(parsed[static_cast<int>(type)], Algo::kAuto) << collTypeName(type);
    EXPECT_NO_THROW(planCall(makeCall(type, 16), ctx)) << collTypeName(type);
  }
  // One-shot serves every collective but not large inputs: those fall back to the planner's choice.
  parseAlgoOverrides("oneshot", parsed, whereRunnable);
  EXPECT_EQ(planCall(makeCall(CollType::kAllReduce, 16), ctx).algo, Algo::kOneShot);
  EXPECT_NE(planCall(makeCall(CollType::kAllReduce, 1 << 22), ctx).algo, Algo::kOneShot);
  // A collective named beside it wins wherever it is listed, and stays strict.
  parseAlgoOverrides("allreduce:ring,oneshot", parsed, whereRunnable);
  EXPECT_EQ(planCall(makeCall(CollType::kAllReduce, 16), ctx).algo, Algo::kRing);
  EXPECT_EQ(planCall(makeCall(CollType::kBroadcast, 16), ctx).algo, Algo::kOneShot);
  parseAlgoOverrides("allreduce:oneshot", parsed, whereRunnable);
  EXPECT_THROW(planCall(makeCall(CollType::kAllReduce, 1 << 22), ctx), CollError);
}

TEST(Planner, MalformedAlgoListsAreRefused) {
  constexpr int kTypes = static_cast<int>(CollType::kCount);
  for (const char* text : {",,,", ",", "ring,", ",ring", "ring,,tree", "allreduce:ring,allreduce:tree", "nosuch",
                           "allreduce:", "bogus:ring"}) {
    Algo parsed[kTypes] = {};
    bool whereRunnable[kTypes] = {};
    try {
      parseAlgoOverrides(text, parsed, whereRunnable);
      ADD_FAILURE() << "COLL_ALGO=\"" << text << "\" was accepted";
    } catch (const CollError& e) {
      EXPECT_EQ(e.code(), collInvalidUsage) << text;
      EXPECT_NE(std::string(e.what()).find(std::string("COLL_ALGO=\"") + text + "\""), std::string::npos) << e.what();
    }
  }
}

void expectInvalidUsage(CollType type, Algo forced, size_t count, const PlanContext& base) {
  Algo overrides[static_cast<int>(CollType::kCount)] = {};
  overrides[static_cast<int>(type)] = forced;
  PlanContext ctx = base;
  ctx.overrides = overrides;
  try {
    Plan plan = planCall(makeCall(type, count), ctx);
    ADD_FAILURE() << algoName(forced) << " for " << what(type, ctx.nranks, count) << " was accepted as "
                  << algoName(plan.algo);
  } catch (const CollError& e) {
    EXPECT_EQ(e.code(), collInvalidUsage) << e.what();
    EXPECT_NE(std::string(e.what()).find("COLL_ALGO"), std::string::npos) << e.what();
  }
}

TEST(Planner, RejectsOverridesThatCannotRun) {
  PlanContext ctx = makeContext(4, true);
  expectInvalidUsage(CollType::kGather, Algo::kRing, 100, ctx);
  expectInvalidUsage(CollType::kScatter, Algo::kTree, 100, ctx);
  expectInvalidUsage(CollType::kAllToAll, Algo::kRing, 100, ctx);
  expectInvalidUsage(CollType::kReduce, Algo::kRing, 100, ctx);
  expectInvalidUsage(CollType::kBroadcast, Algo::kDirect, 100, ctx);
  expectInvalidUsage(CollType::kAllReduce, Algo::kChain, 100, ctx);
  expectInvalidUsage(CollType::kAllGather, Algo::kTree, 100, ctx);
  expectInvalidUsage(CollType::kReduceScatter, Algo::kPairwise, 100, ctx);
  // One-shot forced where it cannot run: input too big, or no shared memory.
  expectInvalidUsage(CollType::kAllReduce, Algo::kOneShot, (64 << 10) / 4 + 1, ctx);
  expectInvalidUsage(CollType::kAllReduce, Algo::kOneShot, 1, makeContext(4, false));
}

// Device buffers allow fewer peers per step (a DeviceStep holds 8): the planner leaves out what
// would not lower, forced or not, and says why.
TEST(Planner, DeviceLimitsAreKnownBeforeLowering) {
  PlanContext ctx = makeContext(512, false);  // a binomial tree's root has 9 children on 512 ranks
  ctx.deviceMemory = true;
  ctx.maxStepPeers = 8;
  for (CollType type : {CollType::kAllReduce, CollType::kBroadcast, CollType::kAllGather})
    EXPECT_NE(planCall(makeCall(type, 1000), ctx).algo, Algo::kTree) << collTypeName(type);
  // Refused with collInvalidUsage and a message that says why.
  auto expectRefused = [&](CollType type, const std::string& because) {
    try {
      Plan plan = planCall(makeCall(type, 1000), ctx);
      ADD_FAILURE() << collTypeName(type) << " on 512 ranks was planned for device buffers as " << algoName(plan.algo);
    } catch (const CollError& e) {
      EXPECT_EQ(e.code(), collInvalidUsage);
      EXPECT_NE(std::string(e.what()).find(because), std::string::npos) << e.what();
    }
  };
  Algo overrides[static_cast<int>(CollType::kCount)] = {};
  overrides[static_cast<int>(CollType::kAllReduce)] = Algo::kTree;
  ctx.overrides = overrides;
  expectRefused(CollType::kAllReduce, "COLL_ALGO: tree needs 9 peers per step on 512 ranks; device buffers allow 8");
  // A reduce has no other algorithm: refused with the reason, not an internal error.
  ctx.overrides = nullptr;
  expectRefused(CollType::kReduce, "at most 8 peers per step");
  // The same calls on host buffers (16 peers per step) take the tree as before.
  PlanContext host = makeContext(512, false);
  EXPECT_EQ(planCall(makeCall(CollType::kReduce, 1000), host).algo, Algo::kTree);
}

TEST(Planner, StepSizeIsAtMostHalfAFifo) {
  for (int depth = 2; depth <= 64; ++depth)
    for (size_t slot : {size_t{4096}, size_t{4160}, size_t{128 << 10}, size_t{1000000}})
      for (size_t elemSize : {1, 2, 4, 8})
        for (CollType type : kPlannedTypes) {
          PlanContext ctx = makeContext(8, false);
          ctx.fifoDepth = depth;
          ctx.slotBytes = slot;
          Plan plan = planCall(makeCall(type, 1 << 22, elemSize), ctx);
          EXPECT_GE(plan.maxStepElems, 1u);
          EXPECT_LE(plan.maxStepElems * elemSize, slot * depth / 2)
              << "depth " << depth << " slot " << slot << " elemSize " << elemSize;
          // A whole slot per step at least, so that the pipeline does not cut slots short.
          EXPECT_GE(plan.maxStepElems, slot / elemSize) << "depth " << depth << " slot " << slot;
        }
}

// buildSchedule for every collective and every algorithm of the table that can run it, simulated
// with the FIFO shape the plan was made for.
TEST(Planner, BuiltSchedulesRunForEveryCollectiveAndAlgorithm) {
  using schedsim::RankMemory;
  std::vector<Algo> algos;  // every row of the table that builds a schedule
  for (const AlgorithmRow& row : algorithmTable())
    if (row.build != nullptr) algos.push_back(row.id);
  int ran = 0;
  for (CollType type : kPlannedTypes)
    for (Algo algo : algos)
      for (int n : {1, 2, 3, 5, 8}) {
        Algo overrides[static_cast<int>(CollType::kCount)] = {};
        overrides[static_cast<int>(type)] = algo;
        PlanContext ctx = makeContext(n, false);
        ctx.slotBytes = 16;  // 2 doubles
        ctx.fifoDepth = 4;
        ctx.overrides = overrides;
        CollCall call = makeCall(type, 23, 8);
        call.root = n - 1;
        Plan plan;
        try {
          plan = planCall(call, ctx);
        } catch (const CollError&) {
          continue;  // cannot run this collective (RejectsOverridesThatCannotRun covers those)
        }
        ASSERT_EQ(plan.algo, algo);
        std::vector<Schedule> schedules;
        for (int r = 0; r < n; ++r) schedules.push_back(buildSchedule(call, plan, r, n));
        std::string structure = schedsim::checkStructure(schedules, 2, false, 0);
        EXPECT_EQ(structure, "") << collTypeName(type) << " " << algoName(algo) << " n=" << n;
        // Generous buffers: the exact outputs are checked by test_schedules' builder cases; here
        // the point is that the plan's step size and the built schedules finish together.
        std::vector<RankMemory> memory(n);
        for (RankMemory& m : memory) {
          size_t len = call.count * n + 1;
          m.mem.assign(2 * len, 1.0);
          m.sendLen = m.recvLen = len;
          m.recvBase = len;
        }
        schedsim::SimConfig config;
        config.depth = ctx.fifoDepth;
        config.slotElems = ctx.slotBytes / call.elemSize;
        schedsim::SimResult result = schedsim::simulate(schedules, memory, config, false);
        EXPECT_TRUE(result.ok) << collTypeName(type) << " " << algoName(algo) << " n=" << n << ": " << result.error;
        ++ran;
      }
  EXPECT_GE(ran, 9 * 5);
}

}  // namespace
}  // namespace coll

namespace coll {
namespace {

// 2 hosts of `perHost` ranks each, host-contiguous ranks, sockets between them.
PlanContext twoHostContext(int perHost) {
  PlanContext ctx = makeContext(2 * perHost, false);
  algorithms::HostLayout hosts(2);
  for (int r = 0; r < 2 * perHost; ++r) hosts[r / perHost].push_back(r);
  algorithms::describeHostLayout(ctx, hosts);
  return ctx;
}

// What the cost models read from a host layout, against the layouts worked out by hand: the
// binomial tree rooted at 0 has edges v - v+2^k, so with hosts {0,1} {2,3} only the 0-2 level
// crosses, with one rank per host every level does, and on one host none.
TEST(Planner, HostLayoutDescribesRingOrderAndCrossingTreeLevels) {
  PlanContext twoByTwo = makeContext(4, false);
  algorithms::describeHostLayout(twoByTwo, {{0, 1}, {2, 3}});
  EXPECT_TRUE(twoByTwo.crossesNetwork);
  EXPECT_EQ(twoByTwo.ringOrder, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(twoByTwo.treeNetLevels, 1);
  PlanContext interleaved = makeContext(4, false);
  algorithms::describeHostLayout(interleaved, {{0, 2}, {1, 3}});
  EXPECT_EQ(interleaved.ringOrder, (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(interleaved.treeNetLevels, 1);  // 0-1 and 2-3 cross; 0-2 stays on its host
  PlanContext eightHosts = makeContext(8, false);
  algorithms::describeHostLayout(eightHosts, {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}});
  EXPECT_EQ(eightHosts.treeNetLevels, 3);
  PlanContext oneHost = makeContext(4, false);
  algorithms::describeHostLayout(oneHost, {{0, 1, 2, 3}});
  EXPECT_FALSE(oneHost.crossesNetwork);
  EXPECT_EQ(oneHost.treeNetLevels, 0);
  EXPECT_EQ(algorithms::hostIndexOfRanks({{0, 2}, {1, 3}}, 4), (std::vector<int>{0, 1, 0, 1}));
}

TEST(Planner, AcrossHostsTheAllReduceIsTheModelsCheapest) {
  const Algo candidates[] = {Algo::kRing, Algo::kTree, Algo::kDoubleTree, Algo::kHier};
  for (int perHost : {1, 2, 4}) {
    PlanContext ctx = twoHostContext(perHost);
    for (size_t bytes : {8ul, 4096ul, 1ul << 20, 64ul << 20}) {
      Algo chosen = planCall(makeCall(CollType::kAllReduce, bytes / 4), ctx).algo;
      for (Algo other : candidates)
        EXPECT_LE(modelAllReduceUs(chosen, bytes, ctx), modelAllReduceUs(other, bytes, ctx))
            << "chose " << algoName(chosen) << " over " << algoName(other) << " at " << bytes << " B, " << perHost
            << " ranks per host";
    }
  }
}

// For every collective: the planner's choice is the cheapest by the model among the rows the
// table makes eligible for it (read from the table, so a new row is held to it too).
TEST(Planner, EveryCollectiveTakesTheCheapestEligibleRow) {
  for (int perHost : {1, 2, 4})
    for (bool acrossHosts : {false, true}) {
      PlanContext ctx = acrossHosts ? twoHostContext(perHost) : makeContext(2 * perHost, false);
      for (CollType type : kPlannedTypes)
        for (size_t bytes : {8ul, 4096ul, 1ul << 20, 16ul << 20}) {
          CollCall call = makeCall(type, bytes / 4);
          Plan plan = planCall(call, ctx);
          const AlgorithmRow& chosen = algorithmRow(plan.algo);
          std::string why;
          for (const AlgorithmRow& row : algorithmTable()) {
            // A row that cannot run the call (exchange beyond half a FIFO) is no candidate.
            if (row.selection != Selection::kModel || !serves(row, type) || !row.eligible(call, ctx) ||
                !row.canRun(call, ctx, nullptr))
              continue;
            EXPECT_LE(chosen.modelUs(call, ctx), row.modelUs(call, ctx))
                << collTypeName(type) << " " << bytes << " B, " << perHost << " per host, across " << acrossHosts
                << ": chose " << chosen.name << " over " << row.name;
          }
        }
    }
}

// Bruck's all-gather (bruck.cc) across hosts: with one rank per host it never carries more than the
// ring, so its fewer rounds win; with several per host its later rounds crowd each host's link, so
// large all-gathers stay on the ring (measured: docs/performance.md). Never on one host.
TEST(Planner, BruckAllGatherWhereItsModelWins) {
  auto allGather = [](const PlanContext& ctx, size_t bytes) {
    return planCall(makeCall(CollType::kAllGather, bytes / 4), ctx).algo;
  };
  PlanContext fourHosts = makeContext(4, false);
  algorithms::describeHostLayout(fourHosts, {{0}, {1}, {2}, {3}});
  for (size_t bytes : {8ul, 64ul << 10, 16ul << 20}) EXPECT_EQ(allGather(fourHosts, bytes), Algo::kBruck) << bytes;
  PlanContext twoByTwo = twoHostContext(2);
  EXPECT_EQ(allGather(twoByTwo, 8), Algo::kBruck);
  EXPECT_EQ(allGather(twoByTwo, 16ul << 20), Algo::kRing);
  for (int n : {2, 4, 8, 16})
    for (size_t bytes : {8ul, 1ul << 20}) EXPECT_NE(allGather(makeContext(n, false), bytes), Algo::kBruck);
}

// Small all-reduces across hosts take the latency algorithms: one exchange of inputs among a few
// ranks, a tree among more; large ones take the bandwidth algorithms.
TEST(Planner, AcrossHostsSmallAllReducesTakeALatencyAlgorithmAndLargeOnesAvoidIt) {
  for (int perHost : {1, 2, 4}) {
    PlanContext ctx = twoHostContext(perHost);
    Algo small = planCall(makeCall(CollType::kAllReduce, 2), ctx).algo;
    if (2 * perHost <= 4) {
      EXPECT_EQ(small, Algo::kExchange) << perHost << " per host: " << algoName(small);
    } else {
      EXPECT_TRUE(small == Algo::kTree || small == Algo::kDoubleTree) << algoName(small);
    }
    Algo large = planCall(makeCall(CollType::kAllReduce, 16 << 20), ctx).algo;
    EXPECT_TRUE(large == Algo::kRing || large == Algo::kHier) << algoName(large);
  }
}

// Two ranks across a network send the same bytes either way, the exchange in one message latency
// where the ring takes two and waits at its phase boundary; from 512 KiB the ring's slices, which
// overlap the reduction with the transfer, win. Measured over sockets (docs/performance.md,
// "Defaults, and the measurement behind each").
TEST(Planner, TwoRanksAcrossANetworkTakeTheExchangeBelow512KiB) {
  PlanContext ctx = twoHostContext(1);
  ctx.slotBytes = size_t{1} << 20;  // a FIFO the exchange could run 1 MiB and more in: the size decides
  ASSERT_GE(stepBytes(ctx), size_t{1} << 20);
  for (size_t bytes : {size_t{8}, size_t{64} << 10, size_t{256} << 10, (size_t{512} << 10) - 4})
    EXPECT_EQ(planCall(makeCall(CollType::kAllReduce, bytes / 4), ctx).algo, Algo::kExchange) << bytes << " B";
  for (size_t bytes : {size_t{512} << 10, size_t{1} << 20, stepBytes(ctx)})
    EXPECT_NE(planCall(makeCall(CollType::kAllReduce, bytes / 4), ctx).algo, Algo::kExchange) << bytes << " B";
}

TEST(Planner, OnOneHostTheHostAwareAlgorithmsOnlyRunWhenForced) {
  PlanContext ctx = makeContext(8, true);
  for (size_t count : {1ul, 1ul << 12, 1ul << 22}) {
    Algo algo = planCall(makeCall(CollType::kAllReduce, count), ctx).algo;
    EXPECT_NE(algo, Algo::kHier);
    EXPECT_NE(algo, Algo::kDoubleTree);
  }
  Algo parsed[static_cast<int>(CollType::kCount)] = {};
  parseAlgoOverrides("allreduce:dbtree", parsed);
  ctx.overrides = parsed;
  EXPECT_EQ(planCall(makeCall(CollType::kAllReduce, 1), ctx).algo, Algo::kDoubleTree);
  parseAlgoOverrides("allreduce:hier", parsed);
  EXPECT_EQ(planCall(makeCall(CollType::kAllReduce, 1), ctx).algo, Algo::kHier);
  parseAlgoOverrides("broadcast:hier", parsed);
  EXPECT_THROW(planCall(makeCall(CollType::kBroadcast, 1), ctx), CollError);
}

TEST(Planner, HostAwareSchedulesRunThroughBuildSchedule) {
  PlanContext ctx = twoHostContext(3);
  for (Algo algo : {Algo::kRing, Algo::kTree, Algo::kDoubleTree, Algo::kHier}) {
    Plan plan;
    plan.algo = algo;
    plan.maxStepElems = 5;
    CollCall call = makeCall(CollType::kAllReduce, 23);
    for (int r = 0; r < ctx.nranks; ++r) {
      Schedule s = buildSchedule(call, plan, r, ctx);
      EXPECT_FALSE(s.steps.empty()) << algoName(algo) << " rank " << r;
      for (const Step& step : s.steps) {
        for (int i = 0; i < step.nsend; ++i) EXPECT_NE(step.sendPeers[i], r);
        for (int i = 0; i < step.nrecv; ++i) EXPECT_NE(step.recvPeers[i], r);
      }
    }
  }
}

}  // namespace
}  // namespace coll
