// Topology from sysfs, for builds without hwloc (the GPU machine image has no libhwloc-dev). It
// reads what hwloc's Linux backend reads for the facts collective needs: which CPUs share a
// core, a package, a NUMA node, and which PCI devices hang off which node.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <utility>

#include "topo/discover.h"
#include "topo/sysfs_read.h"

namespace coll {
namespace topo {
namespace {

const std::string kCpuDir = "/sys/devices/system/cpu";
const std::string kNodeDir = "/sys/devices/system/node";
const std::string kPciDir = "/sys/bus/pci/devices";
const std::string kInfinibandDir = "/sys/class/infiniband";

CpuList onlineCpus() {
  CpuList cpus = parseCpuList(readFirstLine(kCpuDir + "/online"));
  if (!cpus.empty()) return cpus;
  long count = sysconf(_SC_NPROCESSORS_ONLN);
  for (long c = 0; c < count && c < CPU_SETSIZE; ++c) cpus.push_back(static_cast<int>(c));
  return cpus;
}

// Hardware threads that share a core list the same siblings; that list names the core, because
// core_id repeats across packages (and across dies on some machines).
void readCoresAndPackages(const CpuList& online, Topology* topology) {
  std::map<CpuList, Core> coresBySiblings;
  std::map<int, CpuList> cpusByPackage;
  for (int cpu : online) {
    const std::string dir = kCpuDir + "/cpu" + std::to_string(cpu) + "/topology/";
    int package = static_cast<int>(readNumber(dir + "physical_package_id", 0));
    if (package < 0) package = 0;  // some VMs report -1
    std::string siblings = readFirstLine(dir + "core_cpus_list", readFirstLine(dir + "thread_siblings_list"));
    CpuList pus = intersectCpus(parseCpuList(siblings), online);
    if (!containsCpu(pus, cpu)) pus = {cpu};
    auto inserted = coresBySiblings.emplace(pus, Core());
    if (inserted.second) {
      Core& core = inserted.first->second;
      core.osIndex = static_cast<int>(readNumber(dir + "core_id", cpu));
      core.package = package;
      core.pus = pus;
    }
    cpusByPackage[package].push_back(cpu);
  }
  for (auto& entry : coresBySiblings) topology->cores.push_back(std::move(entry.second));
  for (auto& entry : cpusByPackage) topology->packages.push_back({entry.first, entry.second});
}

// "Node 0 MemTotal:  7956696 kB" in nodeN/meminfo.
uint64_t nodeMemoryBytes(const std::string& nodeDir) {
  std::string line = readFirstLine(nodeDir + "/meminfo");
  int node = 0;
  unsigned long long kib = 0;
  if (sscanf(line.c_str(), "Node %d MemTotal: %llu kB", &node, &kib) != 2) return 0;
  return static_cast<uint64_t>(kib) * 1024;
}

void readNumaNodes(const CpuList& online, Topology* topology) {
  for (const std::string& name : listDirectory(kNodeDir)) {
    int index = 0;
    char tail = 0;
    if (sscanf(name.c_str(), "node%d%c", &index, &tail) != 1) continue;
    const std::string dir = kNodeDir + "/" + name;
    NumaNode node;
    node.osIndex = index;
    node.cpus = intersectCpus(parseCpuList(readFirstLine(dir + "/cpulist")), online);
    node.memoryBytes = nodeMemoryBytes(dir);
    topology->numaNodes.push_back(node);  // memory-only nodes (no CPUs) are kept, as hwloc does
  }
  if (!topology->numaNodes.empty()) return;
  // A kernel without NUMA support: the whole machine is one node.
  NumaNode whole;
  whole.osIndex = 0;
  whole.cpus = online;
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && pageSize > 0) whole.memoryBytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize);
  topology->numaNodes.push_back(whole);
}

// The classes hwloc keeps with its "important" I/O filter: what a communication library places
// work near. USB controllers, bridges and the like only add noise.
bool worthListing(uint16_t classId) {
  switch (classId >> 8) {
    case 0x01:  // mass storage
    case 0x02:  // network
    case 0x03:  // display (GPUs)
    case 0x0b:  // processors (co-processors)
    case 0x12:  // processing accelerators
      return true;
    default:
      return false;
  }
}

void readPciDevices(Topology* topology) {
  for (const std::string& busId : listDirectory(kPciDir)) {
    const std::string dir = kPciDir + "/" + busId;
    long classCode = readNumber(dir + "/class", -1);  // 24 bits: class, subclass, programming interface
    if (classCode < 0 || !worthListing(static_cast<uint16_t>(classCode >> 8))) continue;
    PciDevice device;
    device.busId = busId;
    device.classId = static_cast<uint16_t>(classCode >> 8);
    device.vendorId = static_cast<uint16_t>(readNumber(dir + "/vendor", 0));
    device.deviceId = static_cast<uint16_t>(readNumber(dir + "/device", 0));
    device.numaNode = static_cast<int>(readNumber(dir + "/numa_node", -1));
    device.localCpus = parseCpuList(readFirstLine(dir + "/local_cpulist"));
    device.kind = classifyPci(device.classId, device.vendorId);
    topology->pciDevices.push_back(device);
  }
  // Verbs devices (mlx5_0 ...) name the PCI function they drive; network interface names are
  // attached for both sources in finishTopology().
  for (const std::string& verbs : listDirectory(kInfinibandDir)) {
    std::string busId = pciBusIdBehind(kInfinibandDir + "/" + verbs + "/device");
    for (PciDevice& device : topology->pciDevices) {
      if (device.busId == busId) device.osNames.push_back(verbs);
    }
  }
}

}  // namespace

void discoverWithSysfs(Topology* topology) {
  topology->source = "sysfs";
  CpuList online = onlineCpus();
  readCoresAndPackages(online, topology);
  readNumaNodes(online, topology);
  readPciDevices(topology);
}

}  // namespace topo
}  // namespace coll
