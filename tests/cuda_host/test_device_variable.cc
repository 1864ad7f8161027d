// The variable-count collectives on device memory without a GPU: collAllGatherV,
// collReduceScatterV and collAllToAllV as every rank plans them (validated as the API validates
// them, then lowered), run by the unit simulator (tests/cuda_host/unit_simulator.h) in several
// interleavings, against their definition written out here. The counts and displacements are the
// host suite's (tests/multirank/vcoll_cases.h, layoutOf): uneven blocks, uneven blocks with empty
// ones, nothing anywhere, every block but one empty, all alike; displacements packed, and out of
// rank order with gaps that must keep their poison; in place where the API has it; 1..6 ranks,
// both modes and both protocols, on one host and on two.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "src/plan/device_program.h"
#include "src/validate.h"
#include "tests/cuda_host/device_cases.h"
#include "tests/multirank/vcoll_cases.h"

namespace coll {
namespace devsim {
namespace {

using colltest::CountShape;
using colltest::Placement;
using colltest::VColl;
using colltest::VLayout;

constexpr size_t kGuard = 3;
constexpr size_t kElem = 8;  // doubles, as the simulator holds them

double inputValue(int rank, size_t i) { return rank * 100003.0 + static_cast<double>(i) + 1; }

// The shapes of counts, each with a scale that makes its blocks a few slices of smallGeometry long.
constexpr struct {
  CountShape shape;
  size_t scale;
} kShapes[] = {{CountShape::kUneven, 5},
               {CountShape::kSomeZero, 7},
               {CountShape::kAllZero, 1},
               {CountShape::kOnlyOne, 7},
               {CountShape::kAlike, 9}};

VColl vcollOf(CollType type) {
  switch (type) {
    case CollType::kAllGatherV:
      return VColl::kAllGatherV;
    case CollType::kReduceScatterV:
      return VColl::kReduceScatterV;
    default:
      return VColl::kAllToAllV;
  }
}

struct VariableCase {
  CollType type = CollType::kAllGatherV;
  int nranks = 1;
  CountShape shape = CountShape::kSomeZero;
  size_t scale = 7;
  Placement placement = Placement::kReversedWithGaps;
  bool avg = false;
  bool inPlace = false;
  DeviceMode mode = DeviceMode::kConcurrent;
  ProtoChoice protocol = ProtoChoice::kAuto;
  bool twoHosts = false;
  // The host suite's case of the same collective, counts and displacements (in doubles, as the
  // simulator holds them).
  colltest::VCase vcase() const {
    return {vcollOf(type), collFloat64, avg ? collAvg : collSum, shape, scale, placement, inPlace};
  }
  std::string describe() const {
    return vcase().describe() + " nranks=" + std::to_string(nranks) +
           (mode == DeviceMode::kSerialized ? " serialized" : " concurrent") +
           " COLL_PROTO=" + protoChoiceName(protocol) + (twoHosts ? " two hosts" : "");
  }
};

// The call's arrays as rank `rank` passes them (pointing into `l`).
VariableCounts countsOf(const VariableCase& c, const VLayout& l, int rank) {
  VariableCounts counts;
  if (!l.sendcounts.empty()) counts.sendcounts = l.sendcounts.data();
  if (!l.sdispls.empty()) counts.sdispls = l.sdispls.data();
  counts.recvcounts = l.recvcounts.data();
  if (!l.rdispls.empty()) counts.rdispls = l.rdispls.data();
  if (c.type == CollType::kAllGatherV) counts.sendcount = l.recvcounts[rank];
  return counts;
}

size_t blockStart(const std::vector<size_t>& counts, int rank) {
  return std::accumulate(counts.begin(), counts.begin() + rank, size_t{0});
}

// Guards, then the send buffer, a guard, the receive buffer, a guard; in place, the API's layout
// inside one region. Poison everywhere but the inputs.
RankMemory memoryOf(const VariableCase& c, const VLayout& l, int rank) {
  RankMemory m;
  m.fakeBase = (uintptr_t(rank) + 1) << 32;
  if (c.inPlace && c.type == CollType::kAllGatherV) {
    m.mem.resize(kGuard + l.recvElems + kGuard);
    m.recvIndex = kGuard;
    m.sendIndex = kGuard + l.rdispls[rank];
  } else if (c.inPlace && c.type == CollType::kReduceScatterV) {
    m.mem.resize(kGuard + l.sendElems + kGuard);
    m.sendIndex = kGuard;
    m.recvIndex = kGuard + blockStart(l.recvcounts, rank);
  } else {
    m.mem.resize(kGuard + l.sendElems + kGuard + l.recvElems + kGuard);
    m.sendIndex = kGuard;
    m.recvIndex = kGuard + l.sendElems + kGuard;
  }
  for (size_t i = 0; i < m.mem.size(); ++i) m.mem[i] = -2e6 - double(i);
  for (size_t i = 0; i < l.recvElems; ++i) m.mem[m.recvIndex + i] = -1e6 - double(i);
  for (size_t i = 0; i < l.sendElems; ++i) m.mem[m.sendIndex + i] = inputValue(rank, i);
  return m;
}

std::vector<std::vector<double>> expectedMemory(const VariableCase& c, const std::vector<VLayout>& layouts,
                                                const std::vector<RankMemory>& initial) {
  const int n = c.nranks;
  std::vector<std::vector<double>> out;
  for (int r = 0; r < n; ++r) {
    std::vector<double> mem = initial[r].mem;
    double* recv = mem.data() + initial[r].recvIndex;
    const VLayout& l = layouts[r];
    if (c.type == CollType::kAllGatherV) {
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < l.recvcounts[q]; ++i) recv[l.rdispls[q] + i] = inputValue(q, i);
    } else if (c.type == CollType::kReduceScatterV) {
      const size_t start = blockStart(l.recvcounts, r);
      for (size_t i = 0; i < l.recvcounts[r]; ++i) {
        double s = 0;
        for (int q = 0; q < n; ++q) s += inputValue(q, start + i);
        recv[i] = c.avg && n > 1 ? s / n : s;
      }
    } else {
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < l.recvcounts[q]; ++i) recv[l.rdispls[q] + i] = inputValue(q, layouts[q].sdispls[r] + i);
    }
    out.push_back(std::move(mem));
  }
  return out;
}

// Plans every rank's program, lets `tamper` change them (a test that the comparison can fail), runs
// them in the simulator and compares every rank's memory. Returns "" or what went wrong.
std::string runVariableCase(const VariableCase& c, unsigned seed,
                            const std::function<void(std::vector<DeviceProgram>&)>& tamper = {}) {
  std::vector<VLayout> layouts;
  for (int r = 0; r < c.nranks; ++r) layouts.push_back(colltest::layoutOf(c.vcase(), r, c.nranks));
  std::vector<RankMemory> memory;
  for (int r = 0; r < c.nranks; ++r) memory.push_back(memoryOf(c, layouts[r], r));
  const std::vector<std::vector<double>> expected = expectedMemory(c, layouts, memory);
  std::vector<VariableCounts> counts;
  for (int r = 0; r < c.nranks; ++r) counts.push_back(countsOf(c, layouts[r], r));
  std::vector<DeviceProgram> programs;
  for (int r = 0; r < c.nranks; ++r) {
    CollCall call;
    call.type = c.type;
    call.datatype = collFloat64;
    call.op = c.avg ? collAvg : collSum;
    call.sendbuff = reinterpret_cast<const void*>(memory[r].sendAddress(kElem));
    call.recvbuff = reinterpret_cast<void*>(memory[r].recvAddress(kElem));
    call.counts = &counts[r];
    validateCall("device variable test", call, r, c.nranks);  // the count and extents, as the API
    DeviceCallContext context;
    context.rank = r;
    context.nranks = c.nranks;
    context.mode = c.mode;
    context.forced = c.protocol;
    context.geometryOf = smallGeometry;
    if (c.twoHosts) {
      const int half = (c.nranks + 1) / 2;
      context.layout.hosts = {{}, {}};
      for (int q = 0; q < c.nranks; ++q) context.layout.hosts[q < half ? 0 : 1].push_back(q);
    }
    programs.push_back(planDeviceCall(call, context));
  }
  if (tamper) tamper(programs);
  return simulateAndCompare(c.describe(), programs, memory, expected, seed);
}

class DeviceVariable : public ::testing::TestWithParam<CollType> {};

TEST_P(DeviceVariable, EveryRankPatternAndModeRunsCorrectly) {
  const CollType type = GetParam();
  int failures = 0;
  for (int n = 1; n <= 6; ++n)
    for (const auto& shape : kShapes)
      // A reduce-scatter's blocks lie packed in rank order: it takes no displacements.
      for (Placement placement : {Placement::kReversedWithGaps, Placement::kPacked})
        for (int avg = 0; avg <= (type == CollType::kReduceScatterV ? 1 : 0); ++avg)
          for (int inPlace = 0; inPlace <= (type == CollType::kAllToAllV ? 0 : 1); ++inPlace)
            for (DeviceMode mode : {DeviceMode::kConcurrent, DeviceMode::kSerialized})
              for (ProtoChoice proto : {ProtoChoice::kAuto, ProtoChoice::kLL, ProtoChoice::kSimple})
                for (bool twoHosts : {false, true}) {
                  if (type == CollType::kReduceScatterV && placement != Placement::kPacked) continue;
                  if (mode == DeviceMode::kSerialized && proto == ProtoChoice::kLL) continue;  // always Simple
                  if (twoHosts && n < 3) continue;
                  VariableCase c;
                  c.type = type;
                  c.nranks = n;
                  c.shape = shape.shape;
                  c.scale = shape.scale;
                  c.placement = placement;
                  c.avg = avg;
                  c.inPlace = inPlace;
                  c.mode = mode;
                  c.protocol = proto;
                  c.twoHosts = twoHosts;
                  for (unsigned seed : {0u, 1u, 2u}) {
                    const std::string f = runVariableCase(c, seed);
                    if (!f.empty() && ++failures <= 5) ADD_FAILURE() << f;
                  }
                }
}

INSTANTIATE_TEST_SUITE_P(Collectives, DeviceVariable,
                         ::testing::Values(CollType::kAllGatherV, CollType::kReduceScatterV, CollType::kAllToAllV),
                         [](const ::testing::TestParamInfo<CollType>& info) {
                           return std::string(collTypeName(info.param));
                         });

// The comparison can fail: a block written one element off its displacement is seen.
TEST(DeviceVariable, ABlockOneElementOffItsPlaceIsSeen) {
  VariableCase c;
  c.type = CollType::kAllGatherV;
  c.nranks = 3;
  ASSERT_EQ(runVariableCase(c, 0), "");
  const std::string problem = runVariableCase(c, 0, [](std::vector<DeviceProgram>& programs) {
    for (device::DeviceStep& step : programs[0].steps)
      if (step.dstBuffer == device::DeviceBuffer::kRecv && step.count > 0) ++step.dstOffset;
  });
  EXPECT_NE(problem.find("rank 0 element"), std::string::npos) << problem;
}

}  // namespace
}  // namespace devsim
}  // namespace coll
