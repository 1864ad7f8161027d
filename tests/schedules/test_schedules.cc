// Every schedule builder, simulated for all ranks at once (simulator.h): n = 1..16, every root,
// counts 0, 1, odd, n-1, n+1 and several pipeline loops, avg on and off, in place and not, over
// FIFO shapes that follow the planner's rule (a step is at most half a FIFO) and several orders
// of progress. Each case checks the structure of the schedules, that the run finishes without a
// deadlock or a slice mismatch, that every FIFO is empty at the end, and every rank's whole
// memory: outputs by the collective's definition, everything else (send buffers, guards,
// non-root outputs) untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "src/algorithms/algorithms.h"
#include "src/collective_table.h"
#include "src/plan/planner.h"
#include "tests/schedules/collectives.h"
#include "tests/schedules/simulator.h"

namespace coll {
namespace schedsim {
namespace {

struct Shape {
  int depth;
  size_t slotElems;
  size_t maxStepElems;
};

// The planner's maxStepElems for a FIFO of `depth` slots of `slotElems` doubles.
size_t plannerMaxStep(int depth, size_t slotElems) {
  CollCall call;
  call.type = CollType::kAllReduce;
  call.count = 1 << 20;
  call.datatype = collFloat64;
  call.elemSize = sizeof(double);
  PlanContext ctx;
  ctx.nranks = 4;
  ctx.slotBytes = slotElems * sizeof(double);
  ctx.fifoDepth = depth;
  return planCall(call, ctx).maxStepElems;
}

std::vector<Shape> shapes() {
  return {
      {2, 3, 3},                     // depth 2: a step is one slot (maxStepElems == slotElems)
      {4, 2, 4},                     // maxStepElems == slotElems * depth / 2
      {8, 2, 5},                     // ragged slices (2, 2, 1) inside a step
      {3, 1, 1},                     // odd depth, one element per slot
      {8, 4, plannerMaxStep(8, 4)},  // exactly what the planner picks (16)
  };
}

std::vector<size_t> countsFor(int n, size_t maxStep) {
  // 0, 1, odd, n-1, n+1, and several loops of n * maxStepElems (the ring's loop) with a ragged
  // last loop; for the chunked algorithms that is many chunks.
  std::set<size_t> counts = {0,
                             1,
                             7,
                             static_cast<size_t>(n - 1),
                             static_cast<size_t>(n + 1),
                             2 * n * maxStep + static_cast<size_t>(n) / 2 + 1};
  return {counts.begin(), counts.end()};
}

// Every case for one builder (the prototype's builder, and for a table row its algorithm and
// collective). Every shape runs in the executor's order (greedy, ranks 0..n-1); two shapes also
// run one slice per turn and in reverse rank order, the two with steps of exactly half a FIFO also
// in a shuffled order, and in-place layouts run on the first shape.
std::vector<Case> casesFor(const Case& prototype) {
  std::vector<Case> out;
  std::vector<Shape> all = shapes();
  for (int n = 1; n <= 16; ++n) {
    int roots = isRooted(prototype) ? n : 1;
    for (int root = 0; root < roots; ++root)
      for (int avg = 0; avg <= (isReducing(prototype) ? 1 : 0); ++avg)
        for (size_t si = 0; si < all.size(); ++si) {
          const Shape& shape = all[si];
          for (size_t count : countsFor(n, shape.maxStepElems)) {
            Case c = prototype;
            c.nranks = n;
            c.root = root;
            c.count = count;
            c.maxStepElems = shape.maxStepElems;
            c.avg = avg != 0;
            c.sim.depth = shape.depth;
            c.sim.slotElems = shape.slotElems;
            out.push_back(c);
            if (si == 0 || si == 2) {
              Case slow = c;
              slow.sim.greedy = false;
              out.push_back(slow);
              Case rev = c;
              rev.sim.reverse = true;
              out.push_back(rev);
            }
            if (si == 1 || si == 4) {  // exactly half a FIFO per step: the tightest case
              Case shuffled = c;
              shuffled.sim.seed = static_cast<unsigned>(1 + n * 131 + root * 17 + count);
              out.push_back(shuffled);
            }
            if (si == 0 && allowsInPlace(prototype)) {
              Case inPlace = c;
              inPlace.inPlace = true;
              out.push_back(inPlace);
              inPlace.sim.greedy = false;
              inPlace.sim.reverse = true;
              out.push_back(inPlace);
            }
          }
        }
  }
  return out;
}

// Runs every case of casesFor(prototype); reports the first few failures.
void expectEveryCasePasses(const Case& prototype) {
  int failures = 0, ran = 0;
  std::vector<Case> cases = casesFor(prototype);
  for (const Case& c : cases) {
    // A table row that refuses the case (the exchange all-reduce beyond half a FIFO) is not run:
    // the planner never builds it there, and COLL_ALGO forcing it is refused (the multi-rank
    // suite checks that).
    if (!tableRowCanRun(c)) continue;
    ++ran;
    std::string error = runCase(c);
    if (error.empty()) continue;
    if (++failures <= 5) ADD_FAILURE() << c.describe() << ":\n" << error;
  }
  EXPECT_EQ(failures, 0) << "of " << ran << " cases run";
  EXPECT_GE(ran * 4, static_cast<int>(cases.size())) << "most cases must be runnable, " << ran << " of " << cases.size();
}

class EveryBuilder : public ::testing::TestWithParam<Builder> {};

TEST_P(EveryBuilder, SimulatesCorrectlyForAllRanksRootsAndCounts) {
  Case prototype;
  prototype.builder = GetParam();
  expectEveryCasePasses(prototype);
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, EveryBuilder,
    ::testing::Values(Builder::kRingAllReduce, Builder::kRingReduceScatter, Builder::kRingAllGather,
                      Builder::kChainBroadcast, Builder::kTreeBroadcast, Builder::kTreeReduce, Builder::kTreeAllReduce,
                      Builder::kDirectGather, Builder::kDirectScatter, Builder::kPairwiseAllToAll,
                      Builder::kHostRingAllReduce, Builder::kHostRingReduceScatter, Builder::kHostRingAllGather,
                      Builder::kHierAllReduce, Builder::kDoubleTreeAllReduce),
    [](const ::testing::TestParamInfo<Builder>& info) { return std::string(builderName(info.param)); });

// Every row of the algorithm table that builds a schedule, on every collective it serves (a
// barrier moves one byte of the engine's own and has no image to check here; the multi-rank
// suite runs it; so do the variable-count collectives, whose arrays test_variable_schedules.cc
// simulates): the planner's way of building, through the row, over simulated hosts.
struct TableSubject {
  Algo algo;
  CollType type;
};

void PrintTo(const TableSubject& s, std::ostream* os) { *os << algoName(s.algo) << " on " << collTypeName(s.type); }

std::vector<TableSubject> tableSubjects() {
  std::vector<TableSubject> subjects;
  for (const AlgorithmRow& row : algorithmTable())
    for (int t = 0; t < static_cast<int>(CollType::kCount); ++t)
      if (row.build != nullptr && serves(row, static_cast<CollType>(t)) &&
          static_cast<CollType>(t) != CollType::kBarrier && !collectiveRow(static_cast<CollType>(t)).variableCounts)
        subjects.push_back({row.id, static_cast<CollType>(t)});
  return subjects;
}

class EveryTableRow : public ::testing::TestWithParam<TableSubject> {};

TEST_P(EveryTableRow, SimulatesCorrectlyForAllRanksRootsAndCounts) {
  Case prototype;
  prototype.builder = Builder::kTableRow;
  prototype.algo = GetParam().algo;
  prototype.type = GetParam().type;
  expectEveryCasePasses(prototype);
}

INSTANTIATE_TEST_SUITE_P(Schedules, EveryTableRow, ::testing::ValuesIn(tableSubjects()),
                         [](const ::testing::TestParamInfo<TableSubject>& info) {
                           return std::string(algoName(info.param.algo)) + "_" + collTypeName(info.param.type);
                         });

// A few larger communicators, where trees get deeper and rings longer.
TEST(Schedules, LargerCommunicators) {
  for (int b = 0; b < static_cast<int>(Builder::kTableRow); ++b)
    for (int n : {17, 32, 33}) {
      Case proto;
      proto.builder = static_cast<Builder>(b);
      std::vector<int> roots = isRooted(proto) ? std::vector<int>{0, 1, n / 2, n - 1} : std::vector<int>{0};
      for (int root : roots)
        for (size_t count : {static_cast<size_t>(n + 1), static_cast<size_t>(3 * n * 4 + 5)}) {
          Case c = proto;
          c.nranks = n;
          c.root = root;
          c.count = count;
          c.maxStepElems = 4;
          c.avg = isReducing(c);
          c.sim.depth = 4;
          c.sim.slotElems = 2;
          std::string error = runCase(c);
          EXPECT_TRUE(error.empty()) << c.describe() << ":\n" << error;
        }
    }
}

TEST(Schedules, BinomialTreeShape) {
  for (int n = 1; n <= 70; ++n)
    for (int root = 0; root < n; ++root) {
      std::vector<int> depth(n, -1);
      depth[root] = 0;
      EXPECT_EQ(algorithms::binomialParent(n, root, root), -1);
      int maxDepth = 0, ceilLog2 = 0;
      while ((1 << ceilLog2) < n) ++ceilLog2;
      // Breadth first from the root over children lists; every child must name us as parent.
      std::vector<int> frontier = {root};
      int reached = 1;
      while (!frontier.empty()) {
        std::vector<int> next;
        for (int r : frontier) {
          int children[kMaxStepPeers];
          int nc = algorithms::binomialChildren(n, r, root, children, kMaxStepPeers);
          ASSERT_LE(nc, kMaxStepPeers);
          for (int i = 0; i < nc; ++i) {
            int ch = children[i];
            ASSERT_TRUE(ch >= 0 && ch < n && ch != r) << "n=" << n << " root=" << root << " rank " << r;
            ASSERT_EQ(depth[ch], -1) << "rank " << ch << " reached twice, n=" << n << " root=" << root;
            EXPECT_EQ(algorithms::binomialParent(n, ch, root), r) << "n=" << n << " root=" << root;
            depth[ch] = depth[r] + 1;
            maxDepth = std::max(maxDepth, depth[ch]);
            ++reached;
            next.push_back(ch);
          }
        }
        frontier = next;
      }
      EXPECT_EQ(reached, n) << "n=" << n << " root=" << root;
      EXPECT_LE(maxDepth, ceilLog2) << "n=" << n << " root=" << root;
    }
}

TEST(Schedules, TwoRankRingAllGatherReceivesBesideItsSends) {
  // Between 2 ranks each receive shares a batch with the send of its loop, so its landing is
  // offered while the own block goes out; batches hold at most 8 loops (16 transfers, within the
  // device path's limit per launch). On 3 ranks a loop's steps stay apart.
  const size_t maxStep = 5;
  for (size_t count : {static_cast<size_t>(1), maxStep, 3 * maxStep + 1, 19 * maxStep + 2}) {
    for (int rank = 0; rank < 2; ++rank) {
      Schedule s = algorithms::ringAllGather(2, rank, count, maxStep);
      const size_t loops = (count + maxStep - 1) / maxStep;
      ASSERT_EQ(s.steps.size(), 2 * loops) << "count " << count;
      size_t batch = 0;
      for (size_t i = 0; i < s.steps.size(); ++i) {
        const Step& step = s.steps[i];
        EXPECT_EQ(step.nsend, i % 2 == 0 ? 1 : 0) << "count " << count << ", step " << i;
        EXPECT_EQ(step.nrecv, i % 2 == 0 ? 0 : 1) << "count " << count << ", step " << i;
        if (i % 2 == 0) {
          EXPECT_TRUE(step.joinNext) << "count " << count << ": loop " << i / 2 << " apart";
        }
        ++batch;
        EXPECT_LE(batch, 16u) << "count " << count;
        if (!step.joinNext) batch = 0;
      }
      EXPECT_FALSE(s.steps.back().joinNext);
      if (s.steps.size() > 16) {
        EXPECT_FALSE(s.steps[15].joinNext) << "count " << count << ": 8 loops end a batch";
        EXPECT_TRUE(s.steps[13].joinNext) << "count " << count << ": loops share a batch";
      }
    }
  }
  Schedule three = algorithms::ringAllGather(3, 0, 3 * maxStep, maxStep);
  for (const Step& step : three.steps) EXPECT_FALSE(step.joinNext);
}

// ---------------------------------------------------------------------------------------------
// The simulator itself must catch broken schedules.

Case ringCase(int n, size_t count) {
  Case c;
  c.builder = Builder::kRingAllReduce;
  c.nranks = n;
  c.count = count;
  c.maxStepElems = 3;
  c.sim.depth = 2;
  c.sim.slotElems = 3;
  return c;
}

TEST(Simulator, CatchesASwappedPeer) {
  Case c = ringCase(4, 40);
  std::vector<Schedule> s = buildAll(c);
  ASSERT_TRUE(runCase(c, s).empty());
  s[1].steps[0].sendPeers[0] = 3;  // rank 1 sends its first block to rank 3 instead of 2
  EXPECT_FALSE(runCase(c, s).empty());
  // Past the structure check, the simulation itself must notice too.
  std::vector<RankMemory> memory = initialMemory(c);
  std::vector<std::vector<double>> expected = expectedMemory(c, memory);
  SimResult result = simulate(s, memory, c.sim, c.avg);
  bool allRight = result.ok;
  for (int r = 0; r < c.nranks; ++r) allRight = allRight && memory[r].mem == expected[r];
  EXPECT_FALSE(allRight);
}

TEST(Simulator, CatchesADeadlockWhenAStepExceedsTheFifo) {
  // Steps of 7 elements into FIFOs of 2 x 3: every rank fills its successor's FIFO in the first
  // step and waits forever.
  Case c = ringCase(3, 3 * 7);
  c.maxStepElems = 7;
  std::vector<Schedule> s = buildAll(c);
  std::vector<RankMemory> memory = initialMemory(c);
  SimResult result = simulate(s, memory, c.sim, false);
  ASSERT_FALSE(result.ok);
  EXPECT_EQ(result.error.rfind("deadlock", 0), 0u) << result.error;
  EXPECT_NE(result.error.find("rank 2:"), std::string::npos) << result.error;
}

TEST(Simulator, CatchesAMissingAverage) {
  Case c = ringCase(4, 12);
  c.avg = true;
  std::vector<Schedule> s = buildAll(c);
  ASSERT_TRUE(runCase(c, s).empty());
  for (Step& step : s[2].steps) step.finalAvg = false;
  std::string error = runCase(c, s);
  EXPECT_NE(error.find("wrong element"), std::string::npos) << error;
}

TEST(Simulator, CatchesASliceMismatch) {
  Case c = ringCase(3, 9);
  std::vector<Schedule> s = buildAll(c);
  s[0].steps[0].count -= 1;  // rank 0 sends a shorter first block than rank 1 expects
  std::vector<RankMemory> memory = initialMemory(c);
  SimResult result = simulate(s, memory, c.sim, false);
  ASSERT_FALSE(result.ok);
  EXPECT_EQ(result.error.rfind("slice mismatch", 0), 0u) << result.error;
  EXPECT_NE(checkStructure(s, c.sim.slotElems, false, 0), "");
}

TEST(Simulator, CatchesAnUnconsumedSlot) {
  Case c;
  c.builder = Builder::kChainBroadcast;
  c.nranks = 3;
  c.count = 6;
  c.maxStepElems = 3;
  c.sim.depth = 2;
  c.sim.slotElems = 3;
  std::vector<Schedule> s = buildAll(c);
  s[2].steps.pop_back();  // the last rank forgets its last receive
  std::vector<RankMemory> memory = initialMemory(c);
  SimResult result = simulate(s, memory, c.sim, false);
  ASSERT_FALSE(result.ok);
  EXPECT_NE(result.error.find("unconsumed"), std::string::npos) << result.error;
}

TEST(Simulator, CatchesAWriteOutsideTheOutput) {
  Case c;
  c.builder = Builder::kTreeReduce;
  c.nranks = 4;
  c.root = 1;
  c.count = 5;
  c.maxStepElems = 3;
  c.sim.depth = 2;
  c.sim.slotElems = 3;
  std::vector<Schedule> s = buildAll(c);
  s[2].steps[0].dst = recvAt(0);  // a non-root rank writes the receive buffer it has no use of
  std::string error = runCase(c, s);
  EXPECT_NE(error.find("bad access"), std::string::npos) << error;
}

TEST(Simulator, JoinedStepsOnOneConnectionDoNotInterleave) {
  // Rank 0 runs two joined steps over its connection to rank 1: A (also to rank 2) and B. Rank 2
  // first waits for rank 3, which is busy for a few turns, so A stalls on a full FIFO to rank 2
  // while the FIFO to rank 1 drains. B must still wait for A (Executor::claim): if its slices went
  // out in between, rank 1 would take them for A's.
  std::vector<Schedule> s(4);
  for (Schedule& x : s) x.algorithm = "test";
  Step& a = s[0].add(4);
  a.src = sendAt(0);
  a.sendTo(1).sendTo(2);
  a.joinNext = true;
  Step& b = s[0].add(4);
  b.src = sendAt(4);
  b.sendTo(1);
  for (int i = 0; i < 2; ++i) {
    Step& recv = s[1].add(4);
    recv.recvFrom(0);
    recv.dst = recvAt(4 * i);
  }
  Step& fromThree = s[2].add(1);
  fromThree.recvFrom(3);
  fromThree.dst = recvAt(4);
  Step& fromZero = s[2].add(4);
  fromZero.recvFrom(0);
  fromZero.dst = recvAt(0);
  for (int i = 0; i < 5; ++i) {
    Step& busy = s[3].add(1);
    busy.src = sendAt(0);
    busy.dst = recvAt(0);
  }
  s[3].add(1).sendTo(2).src = sendAt(0);

  std::vector<RankMemory> memory(4);
  for (int r = 0; r < 4; ++r) {
    RankMemory& m = memory[r];
    m.mem.assign(16, -1);
    m.sendLen = m.recvLen = 8;
    m.recvBase = 8;
    for (int i = 0; i < 8; ++i) m.mem[i] = r * 100 + i + 1;
  }
  for (bool greedy : {true, false}) {
    std::vector<RankMemory> mem = memory;
    SimConfig config;
    config.depth = 2;
    config.slotElems = 1;
    config.greedy = greedy;
    SimResult result = simulate(s, mem, config, false);
    ASSERT_TRUE(result.ok) << result.error;
    for (int i = 0; i < 8; ++i) EXPECT_EQ(mem[1].mem[8 + i], i + 1) << "rank 1 recv+" << i << ", greedy " << greedy;
    for (int i = 0; i < 4; ++i) EXPECT_EQ(mem[2].mem[8 + i], i + 1) << "rank 2 recv+" << i << ", greedy " << greedy;
    EXPECT_EQ(mem[2].mem[12], 301);
  }
}

}  // namespace
}  // namespace schedsim
}  // namespace coll
