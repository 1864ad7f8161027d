#include "topo/topology.h"

#include <algorithm>

#include "common/net_interfaces.h"
#include "topo/discover.h"

namespace coll {
namespace topo {

namespace {

constexpr uint16_t kVendorNvidia = 0x10de;

void sortTopology(Topology* topology) {
  std::sort(topology->packages.begin(), topology->packages.end(),
            [](const Package& a, const Package& b) { return a.osIndex < b.osIndex; });
  std::sort(topology->numaNodes.begin(), topology->numaNodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.osIndex < b.osIndex; });
  std::sort(topology->cores.begin(), topology->cores.end(), [](const Core& a, const Core& b) {
    if (a.package != b.package) return a.package < b.package;
    return a.pus < b.pus;
  });
  std::sort(topology->pciDevices.begin(), topology->pciDevices.end(),
            [](const PciDevice& a, const PciDevice& b) { return a.busId < b.busId; });
}

// Keeps only online CPUs everywhere, so that every list speaks of the same set of PUs.
void restrictToOnline(Topology* topology) {
  CpuList online;
  for (const Core& core : topology->cores) online = uniteCpus(online, core.pus);
  if (online.empty()) return;
  for (Package& package : topology->packages) package.cpus = intersectCpus(package.cpus, online);
  for (NumaNode& node : topology->numaNodes) node.cpus = intersectCpus(node.cpus, online);
  for (PciDevice& device : topology->pciDevices) device.localCpus = intersectCpus(device.localCpus, online);
  if (topology->packages.empty()) topology->packages.push_back({0, online});
}

int nodeHoldingCpu(const Topology& topology, int cpu) {
  for (const NumaNode& node : topology.numaNodes) {
    if (containsCpu(node.cpus, cpu)) return node.osIndex;
  }
  return -1;
}

// A device whose node the source did not report is still local to a node when its local CPUs
// all lie in that one node, or when the machine has only one node.
int inferDeviceNode(const Topology& topology, const PciDevice& device) {
  if (topology.numaNodes.size() == 1) return topology.numaNodes[0].osIndex;
  if (device.localCpus.empty()) return -1;
  int node = nodeHoldingCpu(topology, device.localCpus.front());
  const NumaNode* holder = topology.numaNode(node);
  return holder != nullptr && containsAllCpus(holder->cpus, device.localCpus) ? node : -1;
}

void linkInterfacesToDevices(Topology* topology) {
  for (const NetInterface& interface : topology->interfaces) {
    if (interface.pciBusId.empty()) continue;
    for (PciDevice& device : topology->pciDevices) {
      if (device.busId != interface.pciBusId) continue;
      if (std::find(device.osNames.begin(), device.osNames.end(), interface.name) == device.osNames.end()) {
        device.osNames.push_back(interface.name);
      }
      // A network interface on an unclassified function (say a class 0x0880 SmartNIC port).
      if (device.kind == PciKind::kOther) device.kind = PciKind::kNic;
    }
  }
}

}  // namespace

PciKind classifyPci(uint16_t classId, uint16_t vendorId) {
  uint16_t base = classId >> 8;
  if (base == 0x03 && vendorId == kVendorNvidia) return PciKind::kGpu;
  if (base == 0x12 && vendorId == kVendorNvidia) return PciKind::kGpu;  // some data-centre parts
  if (base == 0x02) return PciKind::kNic;
  return PciKind::kOther;  // including server BMC VGA controllers: not GPUs to compute on
}

void finishTopology(Topology* topology) {
  topology->hostname = localHostName();
  restrictToOnline(topology);
  sortTopology(topology);
  for (Core& core : topology->cores) {
    if (!core.pus.empty()) core.numaNode = nodeHoldingCpu(*topology, core.pus.front());
  }
  for (PciDevice& device : topology->pciDevices) {
    if (device.numaNode < 0 || topology->numaNode(device.numaNode) == nullptr) {
      device.numaNode = inferDeviceNode(*topology, device);
    }
  }
  topology->interfaces = listNetInterfaces();
  linkInterfacesToDevices(topology);
  topology->processCpus = processAffinity();
}

Topology discoverTopology(TopologySource source) {
  Topology topology;
  std::string why;
  bool found = false;
  if (source != TopologySource::kSysfs) found = discoverWithHwloc(&topology, &why);
  if (!found && source == TopologySource::kHwloc) return Topology();
  if (!found) {
    topology = Topology();  // a failed hwloc load may have left part of it filled
    discoverWithSysfs(&topology);
  }
  finishTopology(&topology);
  return topology;
}

bool haveHwloc() {
#ifdef COLL_HAVE_HWLOC
  return true;
#else
  return false;
#endif
}

CpuList Topology::allCpus() const {
  CpuList cpus;
  for (const Core& core : cores) cpus = uniteCpus(cpus, core.pus);
  return cpus;
}

const NumaNode* Topology::numaNode(int osIndex) const {
  for (const NumaNode& node : numaNodes) {
    if (node.osIndex == osIndex) return &node;
  }
  return nullptr;
}

const PciDevice* Topology::pciDevice(const std::string& busId) const {
  for (const PciDevice& device : pciDevices) {
    if (device.busId == busId) return &device;
  }
  return nullptr;
}

const NetInterface* Topology::interface(const std::string& name) const {
  for (const NetInterface& candidate : interfaces) {
    if (candidate.name == name) return &candidate;
  }
  return nullptr;
}

std::vector<const PciDevice*> Topology::devicesOfKind(PciKind kind) const {
  std::vector<const PciDevice*> devices;
  for (const PciDevice& device : pciDevices) {
    if (device.kind == kind) devices.push_back(&device);
  }
  return devices;
}

CpuList cpusNear(const Topology& topology, const PciDevice& device) {
  const NumaNode* node = topology.numaNode(device.numaNode);
  if (node != nullptr && !node->cpus.empty()) return node->cpus;
  if (!device.localCpus.empty()) return device.localCpus;
  return topology.allCpus();
}

CpuList cpusNear(const Topology& topology, const NetInterface& interface) {
  const PciDevice* device = topology.pciDevice(interface.pciBusId);
  return device != nullptr ? cpusNear(topology, *device) : topology.allCpus();
}

const char* pciKindName(PciKind kind) {
  if (kind == PciKind::kGpu) return "GPU";
  return kind == PciKind::kNic ? "NIC" : "other";
}

const char* pciClassName(uint16_t classId) {
  switch (classId >> 8) {
    case 0x01:
      return "storage";
    case 0x02:
      return classId == 0x0207 ? "infiniband" : "network";
    case 0x03:
      return "display";
    case 0x06:
      return "bridge";
    case 0x0b:
      return "processor";
    case 0x0c:
      return "serial bus";
    case 0x12:
      return "accelerator";
    default:
      return "other";
  }
}

}  // namespace topo
}  // namespace coll
