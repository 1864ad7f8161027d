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
          std::vector<RankMemory> memory(n);
          for (int r = 0; r < n; ++r) {
            schedules.push_back(algorithms::ringAllGatherV(order, r, counts.data(), displs.data(), maxStepElems));
            RankMemory& m = memory[r];
            m.sendBase = kGuard;
            m.sendLen = counts[r];
            m.recvBase = m.sendBase + m.sendLen + kGuard;
            m.recvLen = extent;
            m.mem.assign(m.recvBase + m.recvLen + kGuard, kUntouched);
            for (size_t i = 0; i < counts[r]; ++i) m.mem[m.sendBase + i] = valueOf(r, i);
          }
          const std::string what = std::to_string(n) + " ranks, counts[0] = " + std::to_string(counts[0]) +
                                   (shuffled ? ", shuffled ring" : "") + ", chunk " + std::to_string(maxStepElems);
          EXPECT_EQ(schedsim::checkStructure(schedules, 4, false, maxStepElems), "") << what;
          SimConfig config;
          // FIFOs as small as the planner allows for this chunk (twice its slots: cost_model.cc,
          // stepBytes): a step past the chunk would find no room and deadlock the ring.
          config.slotElems = 4;
          config.depth = 2 * static_cast<int>((maxStepElems + config.slotElems - 1) / config.slotElems);
          SimResult result = schedsim::simulate(schedules, memory, config, false);
          ASSERT_TRUE(result.ok) << what << ": " << result.error;
          for (int r = 0; r < n; ++r) {
            std::vector<double> want(memory[r].mem.size(), kUntouched);
            for (size_t i = 0; i < counts[r]; ++i) want[memory[r].sendBase + i] = valueOf(r, i);
            for (int p = 0; p < n; ++p)
              for (size_t i = 0; i < counts[p]; ++i) want[memory[r].recvBase + displs[p] + i] = valueOf(p, i);
            EXPECT_EQ(memory[r].mem, want) << what << ", rank " << r;
          }
        }
}

}  // namespace
}  // namespace coll
