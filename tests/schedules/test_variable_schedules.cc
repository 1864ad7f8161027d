// The variable-count schedules simulated for all ranks at once (simulator.h): uneven, empty and
// lopsided blocks, in rank order and in a shuffled ring order, with FIFOs small enough that a step
// larger than the loop's chunk would deadlock. Each rank's image is checked element by element,
// gaps between receive regions included.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/algorithms/algorithms.h"
#include "tests/schedules/simulator.h"

namespace coll {
namespace {

using schedsim::RankMemory;
using schedsim::SimConfig;
using schedsim::SimResult;

constexpr double kUntouched = -1;
constexpr size_t kGuard = 3;  // elements around the buffers

double valueOf(int rank, size_t index) { return rank * 1000.0 + static_cast<double>(index); }

// Counts to try on n ranks: uneven, some empty, all in one rank's block, all empty.
std::vector<std::vector<size_t>> countPatterns(int n) {
  std::vector<std::vector<size_t>> patterns(4, std::vector<size_t>(n, 0));
  for (int p = 0; p < n; ++p) {
    patterns[0][p] = 1 + (p * 5 + 3) % 11;
    patterns[1][p] = p % 3 == 1 ? 0 : 2 * p + 1;
  }
  patterns[2][n - 1] = 23;
  return patterns;
}

// Regions in reverse rank order with a gap of 2 before each.
std::vector<size_t> gappedDispls(const std::vector<size_t>& counts, size_t* extent) {
  std::vector<size_t> displs(counts.size());
  size_t at = 0;
  for (size_t i = counts.size(); i-- > 0;) {
    at += 2;
    displs[i] = at;
    at += counts[i];
  }
  *extent = at;
  return displs;
}

// One rank's memory: `sendLen` and `recvLen` elements between guards, the send side filled.
RankMemory memoryFor(int rank, size_t sendLen, size_t recvLen) {
  RankMemory m;
  m.sendBase = kGuard;
  m.sendLen = sendLen;
  m.recvBase = m.sendBase + sendLen + kGuard;
  m.recvLen = recvLen;
  m.mem.assign(m.recvBase + recvLen + kGuard, kUntouched);
  for (size_t i = 0; i < sendLen; ++i) m.mem[m.sendBase + i] = valueOf(rank, i);
  return m;
}

// FIFOs as small as the planner allows for this chunk (twice its slots: cost_model.cc, stepBytes):
// a ring step past the chunk would find no room and deadlock.
SimConfig smallestFifos(size_t maxStepElems) {
  SimConfig config;
  config.slotElems = 4;
  config.depth = 2 * static_cast<int>((maxStepElems + config.slotElems - 1) / config.slotElems);
  return config;
}

TEST(VariableSchedules, RingAllGatherVPlacesEveryBlockAndNothingElse) {
  for (int n = 1; n <= 7; ++n)
    for (const std::vector<size_t>& counts : countPatterns(n))
      for (bool shuffled : {false, true})
        for (size_t maxStepElems : {size_t{3}, size_t{64}}) {
          std::vector<int> order = algorithms::identityOrder(n);
          if (shuffled)
            for (int i = 0; i < n; ++i) order[i] = (n + 1 - i) % n;  // a permutation unlike rank order
          size_t extent = 0;
          const std::vector<size_t> displs = gappedDispls(counts, &extent);
          std::vector<Schedule> schedules;
          std::vector<RankMemory> memory;
          for (int r = 0; r < n; ++r) {
            schedules.push_back(algorithms::ringAllGatherV(order, r, counts.data(), displs.data(), maxStepElems));
            memory.push_back(memoryFor(r, counts[r], extent));
          }
          const std::string what = std::to_string(n) + " ranks, counts[0] = " + std::to_string(counts[0]) +
                                   (shuffled ? ", shuffled ring" : "") + ", chunk " + std::to_string(maxStepElems);
          EXPECT_EQ(schedsim::checkStructure(schedules, 4, false, maxStepElems), "") << what;
          SimResult result = schedsim::simulate(schedules, memory, smallestFifos(maxStepElems), false);
          ASSERT_TRUE(result.ok) << what << ": " << result.error;
          for (int r = 0; r < n; ++r) {
            RankMemory want = memoryFor(r, counts[r], extent);
            for (int p = 0; p < n; ++p)
              for (size_t i = 0; i < counts[p]; ++i) want.mem[want.recvBase + displs[p] + i] = valueOf(p, i);
            EXPECT_EQ(memory[r].mem, want.mem) << what << ", rank " << r;
          }
        }
}

TEST(VariableSchedules, RingReduceScatterVReducesEveryBlock) {
  for (int n = 1; n <= 7; ++n)
    for (const std::vector<size_t>& counts : countPatterns(n))
      for (bool avg : {false, true})
        for (size_t maxStepElems : {size_t{3}, size_t{64}}) {
          std::vector<int> order = algorithms::identityOrder(n);
          for (int i = 0; i < n; ++i) order[i] = (n + 1 - i) % n;
          size_t total = 0;
          std::vector<size_t> offsets(n);
          for (int p = 0; p < n; ++p) offsets[p] = total, total += counts[p];
          std::vector<Schedule> schedules;
          std::vector<RankMemory> memory;
          for (int r = 0; r < n; ++r) {
            schedules.push_back(algorithms::ringReduceScatterV(order, r, counts.data(), maxStepElems, avg));
            memory.push_back(memoryFor(r, total, counts[r]));
          }
          const std::string what = std::to_string(n) + " ranks, counts[0] = " + std::to_string(counts[0]) +
                                   (avg ? ", avg" : "") + ", chunk " + std::to_string(maxStepElems);
          EXPECT_EQ(schedsim::checkStructure(schedules, 4, avg, maxStepElems), "") << what;
          SimResult result = schedsim::simulate(schedules, memory, smallestFifos(maxStepElems), avg);
          ASSERT_TRUE(result.ok) << what << ": " << result.error;
          for (int r = 0; r < n; ++r) {
            RankMemory want = memoryFor(r, total, counts[r]);
            for (size_t i = 0; i < counts[r]; ++i) {
              double sum = 0;
              for (int p = 0; p < n; ++p) sum += valueOf(p, offsets[r] + i);
              want.mem[want.recvBase + i] = avg ? sum / n : sum;
            }
            EXPECT_EQ(memory[r].mem, want.mem) << what << ", rank " << r;
          }
        }
}

TEST(VariableSchedules, PairwiseAllToAllVDeliversEveryPairsMessage) {
  constexpr uint64_t kTag = uint64_t{14} << 60;
  for (int n = 1; n <= 7; ++n)
    for (const std::vector<size_t>& pattern : countPatterns(n)) {
      // Rank `from` sends rank `to` pattern[(from + 2*to) % n] elements.
      auto pair = [&](int from, int to) { return pattern[(from + 2 * to) % n]; };
      std::vector<std::vector<size_t>> sendcounts(n), sdispls(n), recvcounts(n), rdispls(n);
      std::vector<size_t> sendExtent(n), recvExtent(n);
      for (int r = 0; r < n; ++r) {
        for (int p = 0; p < n; ++p) {
          sendcounts[r].push_back(pair(r, p));
          recvcounts[r].push_back(pair(p, r));
        }
        sdispls[r] = gappedDispls(sendcounts[r], &sendExtent[r]);
        rdispls[r] = gappedDispls(recvcounts[r], &recvExtent[r]);
      }
      std::vector<Schedule> schedules;
      std::vector<RankMemory> memory;
      for (int r = 0; r < n; ++r) {
        schedules.push_back(algorithms::pairwiseAllToAllV(n, r, sendcounts[r].data(), sdispls[r].data(),
                                                          recvcounts[r].data(), rdispls[r].data(), kTag));
        memory.push_back(memoryFor(r, sendExtent[r], recvExtent[r]));
      }
      const std::string what = std::to_string(n) + " ranks, pattern[0] = " + std::to_string(pattern[0]);
      EXPECT_EQ(schedsim::checkStructure(schedules, 4, false, 0), "") << what;
      // A pair's two steps carry the same tag: the sender's count is the receiver's.
      for (int r = 0; r < n; ++r)
        for (const Step& step : schedules[r].steps)
          if (step.nsend + step.nrecv > 0) {
            EXPECT_EQ(step.tag, kTag | step.count) << what;
          }
      SimResult result = schedsim::simulate(schedules, memory, smallestFifos(4), false);
      ASSERT_TRUE(result.ok) << what << ": " << result.error;
      for (int r = 0; r < n; ++r) {
        RankMemory want = memoryFor(r, sendExtent[r], recvExtent[r]);
        for (int p = 0; p < n; ++p)
          for (size_t i = 0; i < recvcounts[r][p]; ++i)
            want.mem[want.recvBase + rdispls[r][p] + i] = valueOf(p, sdispls[p][r] + i);
        EXPECT_EQ(memory[r].mem, want.mem) << what << ", rank " << r;
      }
    }
}

}  // namespace
}  // namespace coll
