// Device programs without a GPU: every collective's schedule lowered for 1..8 ranks (every field
// round-trips), cut into launches for both modes, and run by the unit simulator (lanes of every
// rank as independent agents, in several interleavings) against the collective's definition:
// no deadlock, every slot in order, every output right, nothing else touched. Small channel
// geometries make small counts span many slices, steps and pipeline loops; a few cases run with
// the build's geometry. Point-to-point groups with repeated peers and shuffled orders too.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/device_step.h"
#include "src/algorithms/plan_context.h"
#include "tests/cuda_host/device_cases.h"
#include "tests/cuda_host/unit_simulator.h"

namespace coll {
namespace devsim {
namespace {

const CollType kCollectives[] = {CollType::kAllReduce, CollType::kBroadcast,     CollType::kReduce,
                                 CollType::kAllGather, CollType::kReduceScatter, CollType::kGather,
                                 CollType::kScatter,   CollType::kAllToAll,      CollType::kBarrier};

bool isReduction(CollType t) {
  return t == CollType::kAllReduce || t == CollType::kReduce || t == CollType::kReduceScatter;
}
bool isRooted(CollType t) {
  return t == CollType::kBroadcast || t == CollType::kReduce || t == CollType::kGather || t == CollType::kScatter;
}

// The algorithms COLL_ALGO may force on the collective, auto first: every schedule row of the
// algorithm table that serves it (native rows run on host memory only).
std::vector<Algo> algorithmsOf(CollType t) {
  std::vector<Algo> algos = {Algo::kAuto};
  // Rows that never run on device memory (exchange) have nothing to lower.
  PlanContext device;
  device.deviceMemory = true;
  device.nranks = 2;
  CollCall probe;
  probe.type = t;
  probe.count = 1;
  probe.elemSize = 4;
  for (const AlgorithmRow& row : algorithmTable())
    if (row.build != nullptr && serves(row, t) && row.canRun(probe, device, nullptr)) algos.push_back(row.id);
  return algos;
}

std::vector<std::string> runAll(CollType type) {
  std::vector<std::string> failures;
  for (Algo algo : algorithmsOf(type))
    for (int n = 1; n <= 8; ++n) {
      // 0, 1, odd, n+1 and several pipeline loops of the ring (n x 24 elements per loop).
      std::vector<size_t> counts = {0, 1, 7, size_t(n) + 1, size_t(n) * 24 * 2 + 5};
      if (type == CollType::kBarrier) counts = {0};
      std::vector<int> roots = isRooted(type) ? std::vector<int>{0, n - 1} : std::vector<int>{0};
      if (n == 1) roots = {0};
      for (size_t count : counts)
        for (int root : roots)
          for (int avg = 0; avg <= (isReduction(type) ? 1 : 0); ++avg)
            for (int inPlace = 0; inPlace <= (hasInPlaceForm(type) ? 1 : 0); ++inPlace)
              for (DeviceMode mode : {DeviceMode::kConcurrent, DeviceMode::kSerialized})
                for (ProtoChoice proto : {ProtoChoice::kLL, ProtoChoice::kSimple}) {
                  if (mode == DeviceMode::kSerialized && proto == ProtoChoice::kLL) continue;  // always Simple
                  DeviceCase c;
                  c.type = type;
                  c.nranks = n;
                  c.root = root;
                  c.count = count;
                  c.avg = avg;
                  c.inPlace = inPlace;
                  c.mode = mode;
                  c.protocol = proto;
                  c.algo = algo;
                  for (unsigned seed : {0u, 1u, 2u}) {
                    std::string f = runDeviceCase(c, smallGeometry, seed);
                    if (!f.empty() && failures.size() < 5) failures.push_back(f);
                  }
                }
    }
  return failures;
}

class DeviceLowering : public ::testing::TestWithParam<CollType> {};

TEST_P(DeviceLowering, EveryRankCountRootAndModeRunsCorrectly) {
  for (const std::string& f : runAll(GetParam())) ADD_FAILURE() << f;
}

INSTANTIATE_TEST_SUITE_P(Collectives, DeviceLowering, ::testing::ValuesIn(kCollectives),
                         [](const ::testing::TestParamInfo<CollType>& info) {
                           return std::string(collTypeName(info.param));
                         });

// The build's geometry (16 lanes of 256 KiB for Simple, one lane of 4 KiB for LL): a few
// collectives large enough to use several slices per step.
TEST(DeviceLowering, BuildGeometryRunsMultiSliceCalls) {
  struct {
    CollType type;
    int n;
    size_t count;
    size_t elemSize;
    ProtoChoice proto;
  } cases[] = {
      {CollType::kAllReduce, 3, 40000, 1, ProtoChoice::kLL},       // LL slices of 4 KiB
      {CollType::kAllReduce, 2, 600000, 4, ProtoChoice::kSimple},  // 256 Ki floats per slice
      {CollType::kAllGather, 3, 100000, 4, ProtoChoice::kSimple},
      {CollType::kBroadcast, 4, 300000, 4, ProtoChoice::kSimple},
  };
  for (const auto& k : cases)
    for (DeviceMode mode : {DeviceMode::kConcurrent, DeviceMode::kSerialized}) {
      DeviceCase c;
      c.type = k.type;
      c.nranks = k.n;
      c.count = k.count;
      c.elemSize = k.elemSize;
      c.protocol = k.proto;
      c.mode = mode;
      std::string f = runDeviceCase(c, device::geometryOf, 1);
      EXPECT_TRUE(f.empty()) << f;
    }
}

// A local step that reads what an earlier one wrote, split differently among lanes: the lowering
// puts a barrier before it, and without that barrier lanes that drift apart read stale data.
TEST(DeviceLowering, LanesMeetBeforeAStepThatReadsAnotherSplit) {
  Schedule s;
  s.algorithm = "local";
  Step& write = s.add(24);
  write.src = sendAt(0);
  write.dst = recvAt(0);
  Step& read = s.add(12);
  read.src = recvAt(6);
  read.dst = recvAt(30);
  RankMemory m;
  m.fakeBase = uintptr_t(1) << 32;
  m.mem.assign(24 + 3 + 42, -1.0);
  m.recvIndex = 27;
  for (size_t i = 0; i < 24; ++i) m.mem[i] = double(i) + 100;
  LoweringInput in;
  in.elemSize = 8;
  in.geometry = smallGeometry(device::Protocol::kSimple);
  in.sendbuff = reinterpret_cast<const void*>(m.sendAddress(8));
  in.recvbuff = reinterpret_cast<const void*>(m.recvAddress(8));
  const DeviceProgram program = lowerSchedule(s, in);
  ASSERT_EQ(program.steps.size(), 2u);
  EXPECT_FALSE(program.steps[0].flags & device::kStepBarrierBefore);
  ASSERT_TRUE(program.steps[1].flags & device::kStepBarrierBefore);
  std::vector<double> expected = m.mem;
  for (size_t i = 0; i < 24; ++i) expected[27 + i] = double(i) + 100;
  for (size_t i = 0; i < 12; ++i) expected[27 + 30 + i] = double(i + 6) + 100;
  DeviceProgram withoutBarrier = program;
  withoutBarrier.steps[1].flags &= ~device::kStepBarrierBefore;
  int staleSeeds = 0;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::vector<RankMemory> memory = {m};
    ASSERT_TRUE(simulate({program}, memory, seed).ok);
    EXPECT_EQ(memory[0].mem, expected) << "seed " << seed;
    memory = {m};
    ASSERT_TRUE(simulate({withoutBarrier}, memory, seed).ok);
    if (memory[0].mem != expected) ++staleSeeds;
  }
  EXPECT_GT(staleSeeds, 0) << "the simulator never let a lane run ahead: it could not catch a missing barrier";
}

// Lanes split a slice into 16-byte-aligned shares that cover it exactly and fit a slot.
TEST(DeviceLowering, LaneSharesCoverEverySliceOnce) {
  for (uint32_t elemSize : {1u, 2u, 4u, 8u})
    for (uint32_t lanes : {1u, 3u, 16u})
      for (uint64_t count : {0ull, 1ull, 17ull, 1000ull, 123457ull}) {
        const device::ChannelGeometry g{device::Protocol::kSimple, lanes, 4096, 8, 512};
        const uint64_t slice = device::sliceElems(g, elemSize);
        device::DeviceStep step;
        step.count = count;
        step.nsend = 1;
        const uint64_t slices = device::stepSlices(step, slice);
        uint64_t cursor = 0;
        for (uint64_t s = 0; s < slices; ++s)
          for (uint32_t lane = 0; lane < lanes; ++lane) {
            const device::LaneRange r = device::laneRange(step, s, slice, lanes, lane, elemSize);
            ASSERT_EQ(r.begin, cursor) << "shares are consecutive";
            ASSERT_LE(r.end - r.begin, g.slotBytes / elemSize) << "a share fits its slot";
            if (r.end > r.begin) {
              ASSERT_EQ((r.begin - s * slice) * elemSize % 16, 0u) << "16-byte aligned in the slot";
            }
            cursor = r.end;
          }
        EXPECT_EQ(cursor, count) << "elemSize " << elemSize << " lanes " << lanes;
      }
}

// Element i of the k-th message from rank a to rank b.
double messageValue(int a, int b, size_t k, size_t i) { return a * 1e6 + b * 1e4 + double(k) * 100 + double(i); }

// Groups of sends and receives: several to one peer, receives before sends, every size.
TEST(DeviceLowering, PointToPointGroupsWithRepeatedPeersAndAnyOrder) {
  std::mt19937 rng(7);
  for (int n = 1; n <= 5; ++n)
    for (int trial = 0; trial < 20; ++trial)
      for (DeviceMode mode : {DeviceMode::kConcurrent, DeviceMode::kSerialized}) {
        // sizes[a][b]: the messages a sends b, in order.
        std::vector<std::vector<std::vector<size_t>>> sizes(n, std::vector<std::vector<size_t>>(n));
        for (int a = 0; a < n; ++a)
          for (int b = 0; b < n; ++b)
            for (int m = int(rng() % 3); m > 0; --m) sizes[a][b].push_back(rng() % 60);
        std::vector<RankMemory> memory(n);
        std::vector<std::vector<CollCall>> calls(n);
        std::vector<std::vector<double>> expected(n);
        for (int r = 0; r < n; ++r) {
          RankMemory& m = memory[r];
          m.fakeBase = (uintptr_t(r) + 1) << 32;
          // Each rank's sends and receives, interleaved at random but in order per peer.
          std::vector<std::pair<int, int>> order;  // (peer, +1 send / -1 receive)
          for (int p = 0; p < n; ++p) {
            for (size_t k = 0; k < sizes[r][p].size(); ++k) order.emplace_back(p, 1);
            for (size_t k = 0; k < sizes[p][r].size(); ++k) order.emplace_back(p, -1);
          }
          std::shuffle(order.begin(), order.end(), rng);
          std::vector<size_t> sent(n, 0), received(n, 0);
          for (auto [p, dir] : order) {
            const size_t k = dir > 0 ? sent[p]++ : received[p]++;
            const size_t size = dir > 0 ? sizes[r][p][k] : sizes[p][r][k];
            CollCall call;
            call.type = dir > 0 ? CollType::kSend : CollType::kRecv;
            call.peer = p;
            call.count = size;
            call.elemSize = 1;
            const size_t at = m.mem.size() + 1;
            m.mem.resize(at + size + 1, -5.0);
            for (size_t i = 0; i < size; ++i) m.mem[at + i] = dir > 0 ? messageValue(r, p, k, i) : -9.0;
            if (dir > 0) {
              call.sendbuff = reinterpret_cast<const void*>(m.fakeBase + at);
            } else {
              call.recvbuff = reinterpret_cast<void*>(m.fakeBase + at);
            }
            calls[r].push_back(call);
          }
        }
        // What each receive must hold: the matching send's values (the k-th from p to r).
        for (int r = 0; r < n; ++r) {
          expected[r] = memory[r].mem;
          std::vector<size_t> received(n, 0);
          for (const CollCall& call : calls[r]) {
            if (call.type != CollType::kRecv) continue;
            const int p = call.peer;
            const size_t at = reinterpret_cast<uintptr_t>(call.recvbuff) - memory[r].fakeBase;
            const size_t k = received[p]++;
            for (size_t i = 0; i < call.count; ++i) expected[r][at + i] = messageValue(p, r, k, i);
          }
        }
        std::vector<DeviceProgram> programs;
        for (int r = 0; r < n; ++r) {
          DeviceCallContext context;
          context.rank = r;
          context.nranks = n;
          context.mode = mode;
          context.geometryOf = smallGeometry;
          programs.push_back(planDevicePointToPoint(calls[r], context));
        }
        const SimResult result = simulate(programs, memory, trial);
        ASSERT_TRUE(result.ok) << "n " << n << " trial " << trial << ": " << result.error;
        for (int r = 0; r < n; ++r) ASSERT_EQ(memory[r].mem, expected[r]) << "n " << n << " trial " << trial;
      }
}

}  // namespace
}  // namespace devsim
}  // namespace coll
