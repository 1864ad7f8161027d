// The topology discovered on the machine running the tests must be self-consistent, whatever
// the machine: every PU in exactly one core, every core in a NUMA node, counts that match the
// kernel's; and hwloc and the sysfs fallback must describe the same machine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>

#include "topo/discover.h"
#include "topo/sysfs_read.h"
#include "topo/topology.h"
#include "topo/topology_render.h"

namespace coll {
namespace topo {
namespace {

void expectSelfConsistent(const Topology& t) {
  SCOPED_TRACE("topology from " + t.source);
  ASSERT_FALSE(t.cores.empty());
  ASSERT_FALSE(t.numaNodes.empty());
  ASSERT_FALSE(t.packages.empty());
  CpuList all = t.allCpus();
  EXPECT_EQ(static_cast<long>(all.size()), sysconf(_SC_NPROCESSORS_ONLN));

  size_t puCount = 0;
  for (const Core& core : t.cores) {
    ASSERT_FALSE(core.pus.empty());
    puCount += core.pus.size();
    const NumaNode* node = t.numaNode(core.numaNode);
    ASSERT_NE(node, nullptr) << "core with PUs " << formatCpuList(core.pus) << " is in no NUMA node";
    EXPECT_TRUE(containsAllCpus(node->cpus, core.pus)) << "core " << formatCpuList(core.pus);
    bool inPackage = false;
    for (const Package& p : t.packages)
      inPackage = inPackage || (p.osIndex == core.package && containsAllCpus(p.cpus, core.pus));
    EXPECT_TRUE(inPackage) << "core " << formatCpuList(core.pus) << " is not in package " << core.package;
  }
  EXPECT_EQ(puCount, all.size()) << "a PU is listed in two cores";

  CpuList numaCpus, packageCpus;
  std::set<int> nodeIds;
  for (const NumaNode& n : t.numaNodes) {
    EXPECT_TRUE(intersectCpus(numaCpus, n.cpus).empty()) << "NUMA nodes overlap";
    numaCpus = uniteCpus(numaCpus, n.cpus);
    EXPECT_TRUE(nodeIds.insert(n.osIndex).second) << "NUMA node " << n.osIndex << " listed twice";
  }
  for (const Package& p : t.packages) packageCpus = uniteCpus(packageCpus, p.cpus);
  EXPECT_EQ(numaCpus, all);
  EXPECT_EQ(packageCpus, all);

  for (const PciDevice& d : t.pciDevices) {
    EXPECT_TRUE(isPciBusId(d.busId)) << d.busId;
    EXPECT_TRUE(d.numaNode == -1 || t.numaNode(d.numaNode) != nullptr) << d.busId << " NUMA " << d.numaNode;
    EXPECT_TRUE(containsAllCpus(all, d.localCpus)) << d.busId;
    EXPECT_FALSE(cpusNear(t, d).empty()) << d.busId;
  }
  for (const NetInterface& i : t.interfaces) {
    EXPECT_FALSE(i.name.empty());
    EXPECT_TRUE(!i.loopback || i.isVirtual) << i.name << " is loopback but not virtual";
    EXPECT_TRUE(i.pciBusId.empty() || isPciBusId(i.pciBusId)) << i.name << " " << i.pciBusId;
  }
  EXPECT_TRUE(containsAllCpus(all, t.processCpus));
  EXPECT_FALSE(t.processCpus.empty());
}

TEST(Topology, DiscoveredTopologyIsSelfConsistent) {
  Topology t = discoverTopology();
  EXPECT_EQ(t.source, haveHwloc() ? "hwloc" : "sysfs");
  expectSelfConsistent(t);
}

TEST(Topology, SysfsFallbackIsSelfConsistent) { expectSelfConsistent(discoverTopology(TopologySource::kSysfs)); }

TEST(Topology, HwlocAndSysfsDescribeTheSameMachine) {
  if (!haveHwloc()) GTEST_SKIP() << "built without hwloc";
  Topology hw = discoverTopology(TopologySource::kHwloc);
  Topology fs = discoverTopology(TopologySource::kSysfs);
  ASSERT_EQ(hw.source, "hwloc");
  EXPECT_EQ(hw.allCpus(), fs.allCpus());
  ASSERT_EQ(hw.cores.size(), fs.cores.size());
  for (size_t i = 0; i < hw.cores.size(); ++i) EXPECT_EQ(hw.cores[i].pus, fs.cores[i].pus) << "core " << i;
  ASSERT_EQ(hw.numaNodes.size(), fs.numaNodes.size());
  for (size_t i = 0; i < hw.numaNodes.size(); ++i) {
    EXPECT_EQ(hw.numaNodes[i].osIndex, fs.numaNodes[i].osIndex);
    EXPECT_EQ(hw.numaNodes[i].cpus, fs.numaNodes[i].cpus);
  }
  for (PciKind kind : {PciKind::kGpu, PciKind::kNic}) {
    std::vector<std::string> hwIds, fsIds;
    for (const PciDevice* d : hw.devicesOfKind(kind)) hwIds.push_back(d->busId);
    for (const PciDevice* d : fs.devicesOfKind(kind)) fsIds.push_back(d->busId);
    EXPECT_EQ(hwIds, fsIds) << pciKindName(kind) << "s differ";
  }
}

TEST(Topology, HwlocSourceFollowsTheBuild) {
  Topology t = discoverTopology(TopologySource::kHwloc);
  if (haveHwloc()) {
    EXPECT_EQ(t.source, "hwloc");
  } else {
    EXPECT_TRUE(t.source.empty());  // no silent fallback when hwloc was asked for
    EXPECT_TRUE(t.cores.empty());
  }
}

TEST(Topology, RenderingsNameWhatWasFound) {
  Topology t = discoverTopology();
  std::string text = topologyText(t);
  EXPECT_NE(text.find("NUMA node " + std::to_string(t.numaNodes[0].osIndex)), std::string::npos) << text;
  EXPECT_NE(text.find("binding of this process"), std::string::npos) << text;
  std::string json = topologyJson(t);
  EXPECT_NE(json.find("\"pus\": " + std::to_string(t.allCpus().size())), std::string::npos) << json;
  EXPECT_NE(json.find("\"binding\""), std::string::npos);
  EXPECT_NE(topologySummary(t).find(std::to_string(t.cores.size()) + " core"), std::string::npos);
}

TEST(Topology, PciClassification) {
  EXPECT_EQ(classifyPci(0x0302, 0x10de), PciKind::kGpu);    // NVIDIA 3D controller (H100, A100)
  EXPECT_EQ(classifyPci(0x0300, 0x10de), PciKind::kGpu);    // NVIDIA VGA (workstation cards)
  EXPECT_EQ(classifyPci(0x0300, 0x1a03), PciKind::kOther);  // a server BMC's VGA: no GPU to compute on
  EXPECT_EQ(classifyPci(0x0200, 0x8086), PciKind::kNic);    // Ethernet
  EXPECT_EQ(classifyPci(0x0207, 0x15b3), PciKind::kNic);    // InfiniBand
  EXPECT_EQ(classifyPci(0x0108, 0x144d), PciKind::kOther);  // NVMe
  EXPECT_EQ(pciKindName(PciKind::kGpu), std::string("GPU"));
  EXPECT_EQ(pciClassName(0x0302), std::string("display"));
  EXPECT_EQ(pciClassName(0x0207), std::string("infiniband"));
}

NetInterface makeInterface(const std::string& name, bool up, const std::string& pciBusId,
                           std::vector<std::string> addresses) {
  NetInterface i;
  i.name = name;
  i.up = up;
  i.pciBusId = pciBusId;
  i.isVirtual = pciBusId.empty();
  i.loopback = name == "lo";
  i.addresses = std::move(addresses);
  return i;
}

std::vector<NetInterface> sampleInterfaces() {
  return {makeInterface("docker0", true, "", {"172.17.0.1"}), makeInterface("eth0", false, "0000:19:00.0", {}),
          makeInterface("eth1", true, "0000:19:00.1", {"10.0.0.5"}),
          makeInterface("ib0", true, "0000:5e:00.0", {"192.168.1.5"}), makeInterface("lo", true, "", {"127.0.0.1"})};
}

TEST(Interfaces, MatchingFollowsTheSocketIfnameSyntax) {
  std::vector<NetInterface> list = sampleInterfaces();
  EXPECT_EQ(interfaceMatching(list, "eth"), "eth1");  // eth0 is down: the up one wins
  EXPECT_EQ(interfaceMatching(list, "=eth0"), "eth0");
  EXPECT_EQ(interfaceMatching(list, "=eth"), "");
  EXPECT_EQ(interfaceMatching(list, "ib,docker"), "ib0");  // backed by PCI beats virtual
  EXPECT_EQ(interfaceMatching(list, "^eth,ib"), "docker0");
  EXPECT_EQ(interfaceMatching(list, "lo"), "lo");
  EXPECT_EQ(interfaceMatching(list, "wlan"), "");
}

TEST(Interfaces, ReachingLoopbackUsesTheLoopbackInterface) {
  std::vector<NetInterface> list = listNetInterfaces();
  std::string lo;
  for (const NetInterface& i : list) {
    for (const std::string& a : i.addresses) {
      if (a == "127.0.0.1") lo = i.name;
    }
  }
  if (lo.empty()) GTEST_SKIP() << "no interface holds 127.0.0.1";
  EXPECT_EQ(interfaceReaching(list, "127.0.0.1"), lo);
  EXPECT_EQ(interfaceReaching(list, ""), "");
  EXPECT_EQ(interfaceReaching(list, "no-such-host.invalid"), "");
}

}  // namespace
}  // namespace topo
}  // namespace coll
