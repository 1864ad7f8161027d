// The binding rules collrun --bind applies, on hand-built machines: GPUs first, then the job's
// NIC, then round-robin; only allowed CPUs handed out.
#include <gtest/gtest.h>

#include "topo/binding.h"
#include "test_machines.h"

namespace coll {
namespace topo {
namespace {

using testing::laptop;
using testing::twoSocketMachine;

const CpuList kNode0{0, 1, 2, 3, 8, 9, 10, 11};
const CpuList kNode1{4, 5, 6, 7, 12, 13, 14, 15};

BindChoice choose(const Topology& t, BindMode mode, int localRank, int localRanks, const std::string& nic = "",
                  const CpuList& allowed = {}) {
  return chooseBinding(t, BindRequest{mode, localRank, localRanks, allowed, nic});
}

bool mentions(const BindChoice& choice, const std::string& text) {
  return choice.reason.find(text) != std::string::npos;
}

TEST(Binding, NoneLeavesTheAffinityAlone) {
  EXPECT_TRUE(choose(twoSocketMachine(2, true), BindMode::kNone, 0, 4).cpus.empty());
}

TEST(Binding, NumaFollowsEachRanksGpu) {
  Topology t = twoSocketMachine(2, true);
  const CpuList expected[] = {kNode0, kNode0, kNode1, kNode1};
  for (int rank = 0; rank < 4; ++rank) {
    BindChoice c = choose(t, BindMode::kNuma, rank, 4);
    EXPECT_EQ(c.cpus, expected[rank]) << "rank " << rank;
    EXPECT_EQ(c.gpuIndex, rank);
    EXPECT_TRUE(mentions(c, "near GPU" + std::to_string(rank))) << c.reason;
  }
}

TEST(Binding, CoreGivesRanksOfOneGpuNodeDistinctCoresOfThatNode) {
  Topology t = twoSocketMachine(2, true);
  const CpuList expected[] = {{0, 8}, {1, 9}, {4, 12}, {5, 13}, {2, 10}, {3, 11}, {6, 14}, {7, 15}};
  for (int rank = 0; rank < 8; ++rank) {
    BindChoice c = choose(t, BindMode::kCore, rank, 8);
    EXPECT_EQ(c.cpus, expected[rank]) << "rank " << rank;
    EXPECT_EQ(c.gpuIndex, rank % 4);
  }
}

TEST(Binding, CoreWrapsAroundWithinTheGpuNode) {
  Topology t = twoSocketMachine(0, false);
  t.pciDevices.push_back(PciDevice());  // one GPU, on socket 1
  t.pciDevices.back().busId = "0000:86:00.0";
  t.pciDevices.back().kind = PciKind::kGpu;
  t.pciDevices.back().numaNode = 1;
  EXPECT_EQ(choose(t, BindMode::kCore, 3, 5).cpus, (CpuList{7, 15}));
  EXPECT_EQ(choose(t, BindMode::kCore, 4, 5).cpus, (CpuList{4, 12}));  // the node's 4 cores are taken
}

TEST(Binding, GpuOnSameNodeAsTheNicSaysSo) {
  Topology t = twoSocketMachine(2, true);
  EXPECT_EQ(choose(t, BindMode::kCore, 2, 4, "ib1").reason, "core, near GPU2 0000:86:00.0 and NIC ib1 on NUMA 1");
  EXPECT_FALSE(mentions(choose(t, BindMode::kCore, 0, 4, "ib1"), "NIC"));
}

TEST(Binding, WithoutGpusTheNicsNodeIsPreferred) {
  Topology t = twoSocketMachine(0, true);
  for (int rank = 0; rank < 3; ++rank) {
    BindChoice c = choose(t, BindMode::kNuma, rank, 3, "ib1");
    EXPECT_EQ(c.cpus, kNode1) << "rank " << rank;
    EXPECT_EQ(c.gpuIndex, -1);
    EXPECT_TRUE(mentions(c, "near NIC ib1 0000:d8:00.0 on NUMA 1")) << c.reason;
  }
  // core: the NIC's node's cores first, then the rest.
  EXPECT_EQ(choose(t, BindMode::kCore, 0, 6, "ib1").cpus, (CpuList{4, 12}));
  EXPECT_EQ(choose(t, BindMode::kCore, 3, 6, "ib1").cpus, (CpuList{7, 15}));
  EXPECT_EQ(choose(t, BindMode::kCore, 4, 6, "ib1").cpus, (CpuList{0, 8}));
}

TEST(Binding, VirtualOrUnknownInterfacesFallBackToRoundRobin) {
  Topology t = twoSocketMachine(0, true);
  for (const char* nic : {"docker0", "lo", "", "eth9"}) {
    BindChoice c = choose(t, BindMode::kNuma, 1, 2, nic);
    EXPECT_EQ(c.cpus, kNode1) << nic;
    EXPECT_TRUE(mentions(c, "round-robin over 2 NUMA nodes")) << c.reason;
    EXPECT_EQ(choose(t, BindMode::kCore, 5, 8, nic).cpus, (CpuList{5, 13})) << nic;
  }
}

TEST(Binding, RoundRobinOnALaptop) {
  Topology t = laptop(2);
  EXPECT_EQ(choose(t, BindMode::kCore, 0, 3).cpus, CpuList{0});
  EXPECT_EQ(choose(t, BindMode::kCore, 1, 3).cpus, CpuList{1});
  EXPECT_EQ(choose(t, BindMode::kCore, 2, 3).cpus, CpuList{0});  // more ranks than cores: wraps
  EXPECT_EQ(choose(t, BindMode::kNuma, 2, 3).cpus, (CpuList{0, 1}));
  EXPECT_TRUE(mentions(choose(t, BindMode::kCore, 0, 3), "core, round-robin over 2 cores"));
}

// cores (collrun's default): each rank gets its share of its place's cores, consecutive.
TEST(Binding, CoresShareEachGpuNodesCoresAmongItsRanks) {
  Topology t = twoSocketMachine(2, true);  // GPUs 0 and 1 on node 0, 2 and 3 on node 1
  const CpuList expected[] = {{0, 1, 8, 9}, {2, 3, 10, 11}, {4, 5, 12, 13}, {6, 7, 14, 15}};
  for (int rank = 0; rank < 4; ++rank) {
    BindChoice c = choose(t, BindMode::kCores, rank, 4);
    EXPECT_EQ(c.cpus, expected[rank]) << "rank " << rank;
    EXPECT_EQ(c.gpuIndex, rank);
    EXPECT_TRUE(mentions(c, "cores, near GPU" + std::to_string(rank))) << c.reason;
  }
  // Two ranks use GPUs 0 and 1, both near node 0: they split its cores, and node 1 stays free.
  EXPECT_EQ(choose(t, BindMode::kCores, 1, 2).cpus, (CpuList{2, 3, 10, 11}));
  // As many ranks as cores: one each, as core gives.
  for (int rank = 0; rank < 8; ++rank)
    EXPECT_EQ(choose(t, BindMode::kCores, rank, 8).cpus, choose(t, BindMode::kCore, rank, 8).cpus) << rank;
}

TEST(Binding, CoresWithoutGpusFollowTheNicThenRoundRobin) {
  Topology t = twoSocketMachine(0, true);
  EXPECT_EQ(choose(t, BindMode::kCores, 0, 2, "ib1").cpus, kNode1);  // the NIC's node first
  EXPECT_EQ(choose(t, BindMode::kCores, 1, 2, "ib1").cpus, kNode0);
  EXPECT_EQ(choose(t, BindMode::kCores, 1, 4).cpus, (CpuList{2, 3, 10, 11}));
  Topology small = laptop(8);
  EXPECT_EQ(choose(small, BindMode::kCores, 0, 1).cpus, (CpuList{0, 1, 2, 3, 4, 5, 6, 7}));  // a lone rank: all
  EXPECT_EQ(choose(small, BindMode::kCores, 2, 3).cpus, (CpuList{4, 5}));  // 8 / 3: two each, 6 and 7 unused
  EXPECT_EQ(choose(small, BindMode::kCores, 4, 10).cpus, CpuList{4});      // more ranks than cores: one, wrapping
  EXPECT_TRUE(mentions(choose(small, BindMode::kCores, 0, 3), "cores, round-robin over 8 cores"));
}

TEST(Binding, OnlyAllowedCpusAreHandedOut) {
  Topology t = twoSocketMachine(2, true);
  const CpuList noSmt{0, 1, 2, 3, 4, 5, 6, 7};  // e.g. a cgroup without the second threads
  EXPECT_EQ(choose(t, BindMode::kCore, 1, 4, "", noSmt).cpus, CpuList{1});
  EXPECT_EQ(choose(t, BindMode::kNuma, 3, 4, "", noSmt).cpus, (CpuList{4, 5, 6, 7}));
}

TEST(Binding, GpusNearOnlyDisallowedCpusArePassedOver) {
  Topology t = twoSocketMachine(2, true);
  const CpuList socket0{0, 1, 2, 3};
  BindChoice c = choose(t, BindMode::kCore, 2, 4, "", socket0);  // GPU2 is on node 1
  EXPECT_EQ(c.cpus, CpuList{2});
  EXPECT_EQ(c.gpuIndex, -1);
  EXPECT_TRUE(mentions(c, "round-robin")) << c.reason;
  // A GPU of the allowed node still counts.
  EXPECT_EQ(choose(t, BindMode::kCore, 1, 4, "", socket0).gpuIndex, 1);
}

TEST(Binding, GpuOfUnknownLocalityUsesEveryCpu) {
  Topology t = laptop(4);
  PciDevice gpu;
  gpu.busId = "0000:01:00.0";
  gpu.kind = PciKind::kGpu;  // numaNode -1, no local CPUs: nothing is nearer than anything else
  t.pciDevices.push_back(gpu);
  EXPECT_EQ(choose(t, BindMode::kNuma, 1, 2).cpus, (CpuList{0, 1, 2, 3}));
  EXPECT_EQ(choose(t, BindMode::kCore, 0, 2).cpus, CpuList{0});
  EXPECT_EQ(choose(t, BindMode::kCore, 1, 2).cpus, CpuList{1});
}

TEST(Binding, AllowedCpusMissingFromTheTopologyStillCount) {
  Topology t;  // discovery found nothing
  EXPECT_EQ(choose(t, BindMode::kCore, 1, 2, "", {2, 3}).cpus, CpuList{3});
  EXPECT_EQ(choose(t, BindMode::kNuma, 1, 2, "", {2, 3}).cpus, (CpuList{2, 3}));
  EXPECT_TRUE(choose(t, BindMode::kCore, 0, 1).cpus.empty());  // nothing at all: leave it alone
}

TEST(Binding, ThisMachineGivesDistinctCoresUpToItsCoreCount) {
  Topology t = discoverTopology();
  const int cores = static_cast<int>(t.cores.size());
  for (BindMode mode : {BindMode::kCore, BindMode::kCores}) {
    for (int ranks = 1; ranks <= cores; ++ranks) {
      CpuList seen;
      for (int rank = 0; rank < ranks; ++rank) {
        CpuList cpus = choose(t, mode, rank, ranks, "", t.allCpus()).cpus;
        ASSERT_FALSE(cpus.empty());
        EXPECT_TRUE(intersectCpus(seen, cpus).empty())
            << bindModeName(mode) << ", " << ranks << " ranks: rank " << rank << " shares a CPU";
        seen = uniteCpus(seen, cpus);
      }
      // cores hands out every core when the ranks divide them.
      if (mode == BindMode::kCores && cores % ranks == 0) {
        EXPECT_EQ(seen, t.allCpus()) << ranks << " ranks";
      }
    }
  }
}

}  // namespace
}  // namespace topo
}  // namespace coll
