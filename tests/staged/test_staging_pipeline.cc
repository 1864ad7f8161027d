// The staging pipeline's state machine without threads or sockets: every rank's kernel (the host
// stand-in, host_kernel.h, lane by lane), every connection's sender and receiver halves
// (staged_connection.h) and an in-memory host FIFO per connection (memory_fifo.h) are agents that
// take turns in orders chosen by a seed. Every collective on 2-4 ranks, back to back with the
// proxies running ahead into the next call, must end with every output right and nothing left in
// flight: no deadlock from frames that pack lanes or split them, from the host FIFO's credits or
// from slots reused across calls. The plans of both ends of every connection must agree, frame by
// frame, and a frame of another size than planned must fail naming the peer. With copy-then-reduce
// (COLL_STAGED_RECV=copy) the receivers copy what landed into "device" slots through a stand-in copy
// engine that completes one copy per poll, and the kernels read those.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/error.h"
#include "src/call_tag.h"
#include "src/plan/device_program.h"
#include "tests/staged/host_kernel.h"
#include "tests/staged/memory_fifo.h"
#include "tests/staged/staged_cases.h"
#include "transport/staged/staged_connection.h"
#include "transport/staged/staged_settings.h"
#include "transport/staged/staging_layout.h"
#include "transport/staged/staging_memory.h"
#include "transport/staged/staging_plan.h"

namespace coll {
namespace staging_test {
namespace {

using transport::ConnectionPlan;
using transport::StagedDirection;

// Frames of 80 bytes against 64-byte slots: lanes are packed and split.
constexpr size_t kFrameBytes = 80;
constexpr int kFifoDepth = 2;

transport::CallShape shapeOf(const DeviceProgram& p) {
  return {p.steps.data(), static_cast<uint32_t>(p.steps.size()), static_cast<uint32_t>(p.elemSize), p.geometry};
}

// Every rank's memory: a region per direction per peer, one for itself, and the kernels' status.
struct RankRegions {
  std::vector<std::vector<char>> send, recv;  // per peer
  std::vector<std::vector<char>> deviceSlots;  // per peer, with copy-then-reduce
  std::vector<char> self;
  std::vector<device::PeerChannels> table;
  device::DeviceStatus status{};
};

class Pipeline {
 public:
  Pipeline(int nranks, const transport::StagingLayout& layout, bool copyReceive)
      : n_(nranks), layout_(layout), ranks_(nranks) {
    const size_t bytes = layout.regionBytes();
    for (int r = 0; r < n_; ++r) {
      RankRegions& m = ranks_[r];
      m.send.assign(n_, std::vector<char>(bytes, 0));
      m.recv.assign(n_, std::vector<char>(bytes, 0));
      m.deviceSlots.assign(n_, std::vector<char>(copyReceive ? layout.slotsBytes() : 0, 0));
      m.self.assign(bytes, 0);
      m.table.resize(n_);
      for (int p = 0; p < n_; ++p) {
        m.table[p] = p == r ? layout.channels(m.self.data(), m.self.data())
                            : layout.channels(m.recv[p].data(), m.send[p].data());
        if (copyReceive && p != r) m.table[p].recvSlots = m.deviceSlots[p].data();
      }
    }
    for (int a = 0; a < n_; ++a)
      for (int b = 0; b < n_; ++b)
        if (a != b) {
          fifos_[{a, b}] = std::make_unique<MemoryFifo>(kFifoDepth, kFrameBytes);
          senders_[{a, b}] = std::make_unique<transport::StagedSender>(b, ranks_[a].send[b].data(), layout_);
          transport::DeviceSlots device;
          if (copyReceive) {
            uploaders_.push_back(memory_->makeUploader());
            device = {uploaders_.back().get(), ranks_[b].deviceSlots[a].data()};
          }
          receivers_[{a, b}] =
              std::make_unique<transport::StagedReceiver>(a, ranks_[b].recv[a].data(), layout_, device);
        }
  }

  // Hands rank r's next call to its proxies (they may run ahead of its kernel).
  void enqueue(int r, const DeviceProgram& program) {
    for (int p = 0; p < n_; ++p) {
      if (p == r) continue;
      senders_[{r, p}]->enqueue(transport::planConnection(shapeOf(program), p, StagedDirection::kSend, kFrameBytes));
      receivers_[{p, r}]->enqueue(
          transport::planConnection(shapeOf(program), p, StagedDirection::kReceive, kFrameBytes));
    }
  }

  // Runs the calls (kernels[r][k]: rank r's k-th call, in stream order) to the end; "" or why not.
  std::string run(std::vector<std::vector<std::unique_ptr<HostKernel>>>& kernels, unsigned seed) {
    std::vector<size_t> current(n_, 0);
    std::mt19937 rng(seed);
    std::vector<int> agents;  // rank r's lanes as r, connection i as n + i
    for (int r = 0; r < n_; ++r) agents.push_back(r);
    for (size_t i = 0; i < senders_.size(); ++i) agents.push_back(n_ + static_cast<int>(i));
    for (int rounds = 0; rounds < 1000000; ++rounds) {
      std::shuffle(agents.begin(), agents.end(), rng);
      bool moved = false;
      for (int a : agents) moved = (a < n_ ? stepKernel(kernels[a], current[a], rng) : stepConnection(a - n_)) || moved;
      if (finished(kernels, current)) return "";
      if (!moved) return "deadlock: no kernel lane, sender or receiver can move";
    }
    return "did not finish";
  }

 private:
  bool stepKernel(std::vector<std::unique_ptr<HostKernel>>& calls, size_t& current, std::mt19937& rng) {
    while (current < calls.size() && calls[current]->done()) ++current;
    if (current == calls.size()) return false;
    HostKernel& k = *calls[current];
    bool moved = false;
    // Every lane gets a turn (so that a round that moves nothing is a deadlock), from a random
    // first lane, each for one to three events.
    const uint32_t first = static_cast<uint32_t>(rng());
    for (uint32_t i = 0; i < k.lanes(); ++i) {
      const uint32_t lane = (first + i) % k.lanes();
      const int budget = 1 + static_cast<int>(rng() % 3);
      for (int j = 0; j < budget && k.step(lane); ++j) moved = true;
    }
    return moved;
  }
  bool stepConnection(int index) {
    auto s = std::next(senders_.begin(), index);
    auto r = receivers_.find(s->first);
    MemoryFifo& fifo = *fifos_[s->first];
    const bool sent = s->second->progress(fifo) == transport::StagedProgress::kMoved;
    const bool received = r->second->progress(fifo) == transport::StagedProgress::kMoved;
    return sent || received;
  }
  bool finished(const std::vector<std::vector<std::unique_ptr<HostKernel>>>& kernels,
                const std::vector<size_t>& current) const {
    (void)current;
    for (const auto& calls : kernels)
      for (const auto& k : calls)
        if (!k->done()) return false;
    for (const auto& [pair, s] : senders_)
      if (!s->idle() || !receivers_.at(pair)->idle() || fifos_.at(pair)->inFlight() != 0) return false;
    return true;
  }

 public:
  RankRegions& rank(int r) { return ranks_[r]; }

 private:
  int n_;
  transport::StagingLayout layout_;
  std::unique_ptr<transport::StagingMemory> memory_ = transport::makeHostStagingMemory();
  std::vector<std::unique_ptr<transport::SlotUploader>> uploaders_;
  std::vector<RankRegions> ranks_;
  std::map<std::pair<int, int>, std::unique_ptr<MemoryFifo>> fifos_;
  std::map<std::pair<int, int>, std::unique_ptr<transport::StagedSender>> senders_;
  std::map<std::pair<int, int>, std::unique_ptr<transport::StagedReceiver>> receivers_;
};

// Runs `calls` back to back on every rank; returns failures.
std::vector<std::string> runCalls(const std::vector<StagedCase>& calls, int nranks, unsigned seed,
                                  const Algo* overrides = nullptr, const DeviceLayout* plannedFor = nullptr,
                                  bool copyReceive = false) {
  const transport::StagingLayout layout{smallGeometry(device::Protocol::kSimple)};
  Pipeline pipeline(nranks, layout, copyReceive);
  std::vector<std::vector<RankBuffers>> buffers(nranks);
  std::vector<std::vector<DeviceProgram>> programs(nranks);
  std::vector<std::vector<std::unique_ptr<HostKernel>>> kernels(nranks);
  for (int r = 0; r < nranks; ++r) {
    buffers[r].reserve(calls.size());
    programs[r].reserve(calls.size());
    for (const StagedCase& c : calls) {
      buffers[r].push_back(buffersFor(c, r));
      programs[r].push_back(programFor(c, callFor(c, buffers[r].back()), r, overrides, plannedFor));
      pipeline.enqueue(r, programs[r].back());
      HostKernelArgs args;
      args.program = &programs[r].back();
      args.type = c.datatype;
      args.op = c.op;
      args.sendBuffer = buffers[r].back().send.data();
      args.recvBuffer = buffers[r].back().recv.data();
      args.table = &pipeline.rank(r).table;
      args.status = &pipeline.rank(r).status;
      args.rank = r;
      kernels[r].push_back(std::make_unique<HostKernel>(args));
    }
  }
  std::vector<std::string> failures;
  const std::string ran = pipeline.run(kernels, seed);
  if (!ran.empty()) return {calls.front().describe() + " ...: " + ran};
  for (size_t k = 0; k < calls.size(); ++k)
    for (int r = 0; r < nranks; ++r) {
      const std::string wrong = checkOutput(calls[k], buffers[r][k], r);
      if (!wrong.empty()) failures.push_back(wrong);
    }
  return failures;
}

class StagingPipeline : public ::testing::TestWithParam<int> {};

TEST_P(StagingPipeline, EveryCollectiveBackToBackInShuffledOrders) {
  const int n = GetParam();
  const std::vector<StagedCase> all = everyCollective(n);
  // Three calls at a time, so that proxies run ahead into the next call's slots.
  for (size_t first = 0; first < all.size(); first += 3) {
    const std::vector<StagedCase> calls(all.begin() + first, all.begin() + std::min(all.size(), first + 3));
    for (unsigned seed : {1u, 2u}) {
      const std::vector<std::string> failures = runCalls(calls, n, seed);
      ASSERT_TRUE(failures.empty()) << "seed " << seed << ": " << failures.front();
    }
  }
}

// Copy-then-reduce: what lands is copied into device slots by a copy engine that runs behind the
// proxy's back, and marked full only once copied; a flag raised early, or a pinned slot landed
// into again while its copy waits, gives the kernels wrong bytes.
TEST_P(StagingPipeline, EveryCollectiveWithReceivedSlicesCopiedIntoDeviceMemory) {
  const int n = GetParam();
  const std::vector<StagedCase> all = everyCollective(n);
  for (size_t first = 0; first < all.size(); first += 3) {
    const std::vector<StagedCase> calls(all.begin() + first, all.begin() + std::min(all.size(), first + 3));
    const std::vector<std::string> failures = runCalls(calls, n, 3, nullptr, nullptr, /*copyReceive=*/true);
    ASSERT_TRUE(failures.empty()) << failures.front();
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, StagingPipeline, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });

// Every algorithm the planner may give a device all-reduce, forced, through the pipeline: the
// two-level one among them (the device rows' plans run here as they would between hosts).
TEST(StagingPipelineAlgorithms, EveryAllReduceScheduleRunsThroughTheStaging) {
  for (Algo algo : {Algo::kRing, Algo::kTree, Algo::kDoubleTree, Algo::kHier}) {
    Algo overrides[static_cast<int>(CollType::kCount)];
    for (Algo& o : overrides) o = Algo::kAuto;
    overrides[static_cast<int>(CollType::kAllReduce)] = algo;
    for (int n : {3, 4}) {
      StagedCase c;
      c.nranks = n;
      c.count = 517;
      c.algo = algo;
      const std::vector<std::string> failures = runCalls({c, c}, n, 7, overrides);
      ASSERT_TRUE(failures.empty()) << algoName(algo) << ": " << failures.front();
    }
  }
}

// Two levels: 4 ranks on 2 hosts, ranks dealt round-robin ({0, 2}, {1, 3}), the network dear:
// the planner's own choices and the host-aware schedules forced, each through the staging.
TEST(StagingPipelineAlgorithms, TwoLevelPlansRunThroughTheStaging) {
  DeviceLayout layout;
  layout.staged = true;
  layout.hosts = {{0, 2}, {1, 3}};
  layout.networkLink = LinkCost{20.0, 1000.0};
  for (CollType type : {CollType::kAllReduce, CollType::kAllGather, CollType::kReduceScatter})
    for (Algo algo : {Algo::kAuto, Algo::kHier, Algo::kDoubleTree, Algo::kRing, Algo::kBruck}) {
      const AlgorithmRow& row = algo == Algo::kAuto ? algorithmRow(Algo::kRing) : algorithmRow(algo);
      if (!serves(row, type)) continue;
      Algo overrides[static_cast<int>(CollType::kCount)];
      for (Algo& o : overrides) o = Algo::kAuto;
      overrides[static_cast<int>(type)] = algo;
      StagedCase c;
      c.type = type;
      c.nranks = 4;
      c.count = 301;
      c.algo = algo;
      const std::vector<std::string> failures = runCalls({c, c}, 4, 11, overrides, &layout);
      ASSERT_TRUE(failures.empty()) << algoName(algo) << ": " << failures.front();
    }
}

// Both ends of every connection derive the same frames from their own programs.
TEST(StagingPlan, BothEndsOfEveryConnectionPlanTheSameFrames) {
  for (int n = 2; n <= 4; ++n)
    for (const StagedCase& c : everyCollective(n)) {
      std::vector<RankBuffers> buffers;
      std::vector<DeviceProgram> programs;
      for (int r = 0; r < n; ++r) buffers.push_back(buffersFor(c, r));
      for (int r = 0; r < n; ++r) programs.push_back(programFor(c, callFor(c, buffers[r]), r, nullptr));
      for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b) {
          if (a == b) continue;
          const ConnectionPlan out = transport::planConnection(shapeOf(programs[a]), b, StagedDirection::kSend, 100);
          const ConnectionPlan in = transport::planConnection(shapeOf(programs[b]), a, StagedDirection::kReceive, 100);
          ASSERT_EQ(out.frames.size(), in.frames.size()) << c.describe() << " " << a << "->" << b;
          ASSERT_EQ(out.bytes(), in.bytes()) << c.describe();
          for (size_t f = 0; f < out.frames.size(); ++f) ASSERT_EQ(out.frames[f].bytes, in.frames[f].bytes);
        }
    }
}

// Frames: at most frameBytes, one slice each, every byte of every transfer exactly once, in order.
TEST(StagingPlan, FramesPackLanesOfOneSliceAndSplitLargeShares) {
  StagedCase c;
  c.count = 1001;
  RankBuffers b = buffersFor(c, 0);
  const DeviceProgram p = programFor(c, callFor(c, b), 0, nullptr);
  for (size_t frameBytes : {size_t(16), size_t(80), size_t(1000)}) {
    const ConnectionPlan plan = transport::planConnection(shapeOf(p), 1, StagedDirection::kSend, frameBytes);
    ASSERT_FALSE(plan.frames.empty());
    std::vector<uint64_t> covered(plan.transfers.size(), 0);
    for (const transport::StagedFrame& f : plan.frames) {
      EXPECT_LE(f.bytes, frameBytes);
      uint64_t sum = 0;
      const uint32_t seq = plan.transfers[plan.pieces[f.firstPiece].transfer].seq;
      for (uint32_t i = f.firstPiece; i < f.firstPiece + f.pieces; ++i) {
        const transport::FramePiece& piece = plan.pieces[i];
        EXPECT_EQ(plan.transfers[piece.transfer].seq, seq) << "a frame mixes two slices";
        EXPECT_EQ(piece.offset, covered[piece.transfer]) << "pieces out of order";
        covered[piece.transfer] += piece.bytes;
        sum += piece.bytes;
      }
      EXPECT_EQ(sum, f.bytes);
    }
    for (size_t t = 0; t < plan.transfers.size(); ++t) EXPECT_EQ(covered[t], plan.transfers[t].bytes);
  }
}

// The build's geometry lays a staged region out exactly as the kernels lay out a P2P connection.
TEST(StagingLayout, TheBuildsGeometryIsTheKernelsChannelLayout) {
  const transport::StagingLayout layout{device::kSimpleGeometry};
  EXPECT_EQ(layout.regionBytes(), device::connectionBytes());
  EXPECT_EQ(layout.dataBase(), device::simpleDataBase());
  for (uint32_t lane : {0u, 1u, device::kSimpleGeometry.lanes - 1})
    for (uint32_t slot : {0u, device::kSimpleGeometry.depth - 1}) {
      EXPECT_EQ(layout.flagOffset(lane, slot), device::simpleFlagOffset(lane, slot));
      EXPECT_EQ(layout.slotOffset(lane, slot), device::simpleSlotOffset(lane, slot));
    }
}

// Rank 1's plan for what rank 0 sends it in an all-reduce of `count` floats on 2 ranks.
ConnectionPlan rank1ReceivesFromRank0(size_t count) {
  StagedCase c;
  c.count = count;
  RankBuffers b = buffersFor(c, 1);
  const DeviceProgram p = programFor(c, callFor(c, b), 1, nullptr);
  return transport::planConnection(shapeOf(p), 0, StagedDirection::kReceive, kFrameBytes);
}

// A frame whose size differs from the plan (the peer planned another call) fails, naming the
// peer, and writes nothing into the slots.
TEST(StagedReceiver, AFrameOfAnotherSizeFailsNamingThePeer) {
  const transport::StagingLayout layout{smallGeometry(device::Protocol::kSimple)};
  std::vector<char> region(layout.regionBytes(), 0);
  transport::StagedReceiver receiver(0, region.data(), layout);
  receiver.enqueue(rank1ReceivesFromRank0(10));
  MemoryFifo fifo(kFifoDepth, kFrameBytes);
  char* slot = static_cast<char*>(fifo.tryAcquire());
  std::fill(slot, slot + kFrameBytes, 'x');
  fifo.post(kFrameBytes, 0);  // 10 floats on 2 ranks: no frame of the plan has more than 40 bytes
  try {
    receiver.progress(fifo);
    ADD_FAILURE() << "a frame of the wrong size was taken";
  } catch (const CollError& e) {
    EXPECT_EQ(e.code(), collRemoteError);
    EXPECT_NE(std::string(e.what()).find("staging from rank 0"), std::string::npos) << e.what();
  }
  for (char byte : region) ASSERT_EQ(byte, 0);
}

// A frame of another call (the sender's count or datatype differs: its tag, src/call_tag.h) fails
// naming both calls, even when its size is the one the plan expects, and writes nothing into the
// slots: by size alone it would have been taken, and the counts told apart only when a later
// frame's size differed, if ever.
TEST(StagedReceiver, AFrameOfAnotherCallFailsEvenWithTheExpectedSize) {
  StagedCase c;
  c.count = 10;
  RankBuffers b = buffersFor(c, 1);
  const CollCall call = callFor(c, b);
  const DeviceProgram p = programFor(c, call, 1, nullptr);
  transport::CallShape shape = shapeOf(p);
  shape.tag = collectiveTagOf(call);
  shape.describeTag = &describeCallTag;
  const transport::StagingLayout layout{smallGeometry(device::Protocol::kSimple)};
  std::vector<char> region(layout.regionBytes(), 0);
  transport::StagedReceiver receiver(0, region.data(), layout);
  const ConnectionPlan plan = transport::planConnection(shape, 0, StagedDirection::kReceive, kFrameBytes);
  ASSERT_FALSE(plan.frames.empty());
  receiver.enqueue(plan);
  MemoryFifo fifo(kFifoDepth, kFrameBytes);
  char* slot = static_cast<char*>(fifo.tryAcquire());
  const size_t bytes = plan.frames.front().bytes;
  std::fill(slot, slot + bytes, 'x');
  CollCall twice = call;
  twice.count = 2 * call.count;
  fifo.post(bytes, collectiveTagOf(twice));
  try {
    receiver.progress(fifo);
    ADD_FAILURE() << "a frame of another call was taken";
  } catch (const CollError& e) {
    EXPECT_EQ(e.code(), collRemoteError);
    for (const char* words : {"staging from rank 0", "count 20 of float", "count 10 of float"})
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << words << " not in: " << e.what();
  }
  for (char byte : region) ASSERT_EQ(byte, 0);
}

// A copy engine the test completes by hand.
class ManualUploader final : public transport::SlotUploader {
 public:
  uint64_t start(void* device, const void* host, size_t bytes) override {
    queued_.push_back({device, host, bytes});
    return ++started_;
  }
  uint64_t completed() override { return completed_; }
  void completeAll() {
    for (const Copy& c : queued_) std::memcpy(c.device, c.host, c.bytes);
    queued_.clear();
    completed_ = started_;
  }
  uint64_t started() const { return started_; }

 private:
  struct Copy {
    void* device;
    const void* host;
    size_t bytes;
  };
  std::vector<Copy> queued_;
  uint64_t started_ = 0;
  uint64_t completed_ = 0;
};

// Copy-then-reduce, one frame: what landed stays unmarked (flag 0) and the device slot untouched
// while its copy runs; once the copy completes the slot is marked full and holds the frame's bytes.
TEST(StagedReceiver, ASlotCopiedIntoDeviceMemoryIsMarkedFullOnlyOnceItsCopyCompleted) {
  const transport::StagingLayout layout{smallGeometry(device::Protocol::kSimple)};
  std::vector<char> region(layout.regionBytes(), 0);
  std::vector<char> slots(layout.slotsBytes(), 0);
  ManualUploader uploader;
  transport::StagedReceiver receiver(0, region.data(), layout, transport::DeviceSlots{&uploader, slots.data()});
  const ConnectionPlan plan = rank1ReceivesFromRank0(10);
  receiver.enqueue(plan);
  const transport::StagedFrame* first = nullptr;
  for (const transport::StagedFrame& f : plan.frames)
    if (f.bytes > 0) {
      first = &f;
      break;
    }
  ASSERT_NE(first, nullptr);
  const size_t firstIndex = static_cast<size_t>(first - plan.frames.data());
  MemoryFifo fifo(kFifoDepth, kFrameBytes);
  // The frames before it carry nothing; it is filled with 'a', 'b', ... so that each byte tells
  // where it came from.
  char* slot = static_cast<char*>(fifo.tryAcquire());
  for (uint64_t i = 0; i < first->bytes; ++i) slot[i] = static_cast<char>('a' + i % 26);
  fifo.post(first->bytes, plan.tag);
  receiver.progress(fifo);
  ASSERT_GT(uploader.started(), 0u) << "nothing was copied towards device memory";
  auto flag = [&](const transport::StagedTransfer& t) {
    uint32_t value;
    std::memcpy(&value, region.data() + layout.flagOffset(t.lane, t.seq % layout.geometry.depth), sizeof value);
    return value;
  };
  std::vector<const transport::FramePiece*> finished;  // pieces that end their transfer
  for (uint32_t i = first->firstPiece; i < first->firstPiece + first->pieces; ++i) {
    const transport::FramePiece& piece = plan.pieces[i];
    if (piece.offset + piece.bytes == plan.transfers[piece.transfer].bytes) finished.push_back(&piece);
  }
  ASSERT_FALSE(finished.empty());
  for (const transport::FramePiece* piece : finished) {
    EXPECT_EQ(flag(plan.transfers[piece->transfer]), 0u) << "marked full before its copy completed";
  }
  for (char byte : slots) ASSERT_EQ(byte, 0) << "the device slots changed before a copy completed";
  EXPECT_FALSE(receiver.idle());
  EXPECT_EQ(receiver.progress(fifo), transport::StagedProgress::kWaitsForCopy);

  uploader.completeAll();
  receiver.progress(fifo);
  uint64_t landed = 0;
  for (uint32_t i = first->firstPiece; i < first->firstPiece + first->pieces; ++i) {
    const transport::FramePiece& piece = plan.pieces[i];
    const transport::StagedTransfer& t = plan.transfers[piece.transfer];
    const char* device = slots.data() + layout.slotInSlots(t.lane, t.seq % layout.geometry.depth) + piece.offset;
    for (uint64_t k = 0; k < piece.bytes; ++k)
      ASSERT_EQ(device[k], static_cast<char>('a' + (landed + k) % 26)) << "frame " << firstIndex << ", byte " << k;
    landed += piece.bytes;
    if (piece.offset + piece.bytes == t.bytes) {
      EXPECT_EQ(flag(t), 1u);
    }
  }
}

// A copy into device memory that never completes (on a GPU: queued behind the collective's own
// stream) fails the receiver after the timeout, naming the peer and the way out, not a hang.
TEST(StagedReceiver, ACopyIntoDeviceMemoryThatNeverCompletesFailsAfterTheTimeout) {
  const transport::StagingLayout layout{smallGeometry(device::Protocol::kSimple)};
  std::vector<char> region(layout.regionBytes(), 0);
  std::vector<char> slots(layout.slotsBytes(), 0);
  ManualUploader uploader;  // never completed
  const int64_t timeoutNs = 20 * 1000 * 1000;
  transport::StagedReceiver receiver(0, region.data(), layout,
                                     transport::DeviceSlots{&uploader, slots.data(), timeoutNs});
  const ConnectionPlan plan = rank1ReceivesFromRank0(10);
  receiver.enqueue(plan);
  MemoryFifo fifo(kFifoDepth, kFrameBytes);
  for (const transport::StagedFrame& f : plan.frames)
    if (f.bytes > 0) {
      ASSERT_NE(fifo.tryAcquire(), nullptr);
      fifo.post(f.bytes, plan.tag);  // the frame's bytes are whatever the slot holds
      break;
    }
  const int64_t start = monotonicNs();
  try {
    while (monotonicNs() - start < 100 * timeoutNs) {
      receiver.progress(fifo);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ADD_FAILURE() << "a copy that never completed did not fail the receiver";
  } catch (const CollError& e) {
    EXPECT_EQ(e.code(), collTimeout);
    EXPECT_GE(monotonicNs() - start, timeoutNs);
    const std::string what = e.what();
    EXPECT_NE(what.find("staging from rank 0"), std::string::npos) << what;
    EXPECT_NE(what.find("COLL_STAGED_RECV=mapped"), std::string::npos) << what;
  }
  EXPECT_GT(uploader.started(), 0u);
}

// COLL_STAGED_RECV: mapped or copy; anything else is refused naming the value, settings untouched.
TEST(StagedSettings, TheReceiveModeComesFromTheEnvironment) {
  transport::TransportSettings settings;
  setenv("COLL_STAGED_RECV", "copy", 1);
  transport::readStagedSettings(&settings);
  EXPECT_TRUE(settings.stagedCopyReceive);
  setenv("COLL_STAGED_RECV", "mapped", 1);
  transport::readStagedSettings(&settings);
  EXPECT_FALSE(settings.stagedCopyReceive);
  setenv("COLL_STAGED_RECV", "copies", 1);
  try {
    transport::readStagedSettings(&settings);
    ADD_FAILURE() << "COLL_STAGED_RECV=copies was taken";
  } catch (const CollError& e) {
    EXPECT_EQ(e.code(), collInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("COLL_STAGED_RECV=copies: expected mapped"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(settings.stagedCopyReceive);
  unsetenv("COLL_STAGED_RECV");
}
}  // namespace
}  // namespace staging_test
}  // namespace coll
