// Topology from hwloc, when the build has it (COLL_HAVE_HWLOC). hwloc knows more than sysfs
// shows plainly: the NUMA locality of PCI devices on machines whose firmware leaves numa_node
// at -1 but describes the bridges, and the CUDA/NVML names its plugins attach to GPUs.
#include "topo/discover.h"

#ifdef COLL_HAVE_HWLOC

#include <hwloc.h>

#include <cstdio>
#include <memory>

namespace coll {
namespace topo {
namespace {

CpuList cpusOf(hwloc_const_bitmap_t set) {
  CpuList cpus;
  if (set == nullptr) return cpus;
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) {
    if (i < CPU_SETSIZE) cpus.push_back(i);
  }
  return cpus;
}

int ancestorPackage(hwloc_topology_t hw, hwloc_obj_t obj) {
  hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(hw, HWLOC_OBJ_PACKAGE, obj);
  return package != nullptr ? static_cast<int>(package->os_index) : 0;
}

void readPackages(hwloc_topology_t hw, Topology* topology) {
  for (hwloc_obj_t obj = nullptr; (obj = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_PACKAGE, obj)) != nullptr;) {
    topology->packages.push_back({static_cast<int>(obj->os_index), cpusOf(obj->cpuset)});
  }
}

void readNumaNodes(hwloc_topology_t hw, Topology* topology) {
  for (hwloc_obj_t obj = nullptr; (obj = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_NUMANODE, obj)) != nullptr;) {
    NumaNode node;
    node.osIndex = static_cast<int>(obj->os_index);
    node.cpus = cpusOf(obj->cpuset);
    node.memoryBytes = obj->attr != nullptr ? obj->attr->numanode.local_memory : 0;
    topology->numaNodes.push_back(node);
  }
}

// PUs without a Core above them (hwloc leaves some platforms' cores out) become cores of one.
void readCores(hwloc_topology_t hw, Topology* topology) {
  CpuList covered;
  for (hwloc_obj_t obj = nullptr; (obj = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_CORE, obj)) != nullptr;) {
    Core core;
    core.osIndex = static_cast<int>(obj->os_index);
    core.package = ancestorPackage(hw, obj);
    core.pus = cpusOf(obj->cpuset);
    covered = uniteCpus(covered, core.pus);
    topology->cores.push_back(core);
  }
  for (hwloc_obj_t obj = nullptr; (obj = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_PU, obj)) != nullptr;) {
    int cpu = static_cast<int>(obj->os_index);
    if (containsCpu(covered, cpu) || cpu >= CPU_SETSIZE) continue;
    Core core;
    core.osIndex = cpu;
    core.package = ancestorPackage(hw, obj);
    core.pus = {cpu};
    topology->cores.push_back(core);
  }
}

// CUDA (coprocessor "cuda0") and NVML ("nvml0") devices are GPUs whatever the PCI class says.
bool isGpuOsDevice(hwloc_obj_t osdev) {
  hwloc_obj_osdev_type_t type = osdev->attr->osdev.type;
  return type == HWLOC_OBJ_OSDEV_GPU || type == HWLOC_OBJ_OSDEV_COPROC;
}

bool isNicOsDevice(hwloc_obj_t osdev) {
  hwloc_obj_osdev_type_t type = osdev->attr->osdev.type;
  return type == HWLOC_OBJ_OSDEV_NETWORK || type == HWLOC_OBJ_OSDEV_OPENFABRICS;
}

PciDevice pciDeviceOf(hwloc_topology_t hw, hwloc_obj_t obj) {
  const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci = obj->attr->pcidev;
  PciDevice device;
  char busId[32];
  snprintf(busId, sizeof(busId), "%04x:%02x:%02x.%01x", static_cast<unsigned>(pci.domain),
           static_cast<unsigned>(pci.bus), static_cast<unsigned>(pci.dev), static_cast<unsigned>(pci.func));
  device.busId = busId;
  device.vendorId = pci.vendor_id;
  device.deviceId = pci.device_id;
  device.classId = pci.class_id;
  device.kind = classifyPci(device.classId, device.vendorId);
  hwloc_obj_t local = hwloc_get_non_io_ancestor_obj(hw, obj);
  if (local != nullptr) {
    device.localCpus = cpusOf(local->cpuset);
    if (local->nodeset != nullptr && hwloc_bitmap_weight(local->nodeset) == 1) {
      device.numaNode = hwloc_bitmap_first(local->nodeset);
    }
  }
  bool gpu = false, nic = false;
  for (hwloc_obj_t child = obj->io_first_child; child != nullptr; child = child->next_sibling) {
    if (child->type != HWLOC_OBJ_OS_DEVICE || child->name == nullptr) continue;
    device.osNames.push_back(child->name);
    gpu = gpu || isGpuOsDevice(child);
    nic = nic || isNicOsDevice(child);
  }
  if (device.kind == PciKind::kOther && gpu) device.kind = PciKind::kGpu;
  if (device.kind == PciKind::kOther && nic) device.kind = PciKind::kNic;
  return device;
}

void readPciDevices(hwloc_topology_t hw, Topology* topology) {
  for (hwloc_obj_t obj = nullptr; (obj = hwloc_get_next_pcidev(hw, obj)) != nullptr;) {
    topology->pciDevices.push_back(pciDeviceOf(hw, obj));
  }
}

struct HwlocTopologyDeleter {
  void operator()(hwloc_topology* hw) const { hwloc_topology_destroy(hw); }
};

}  // namespace

bool discoverWithHwloc(Topology* topology, std::string* why) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    *why = "hwloc_topology_init failed";
    return false;
  }
  std::unique_ptr<hwloc_topology, HwlocTopologyDeleter> hw(raw);
  // The host as it is, not as this process's cgroup or affinity sees it: binding intersects
  // with the allowed CPUs itself, and colltopo should describe the machine.
  hwloc_topology_set_flags(raw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(raw) != 0) {
    *why = "hwloc_topology_load failed";
    return false;
  }
  topology->source = "hwloc";
  readPackages(raw, topology);
  readNumaNodes(raw, topology);
  readCores(raw, topology);
  readPciDevices(raw, topology);
  return true;
}

}  // namespace topo
}  // namespace coll

#else  // !COLL_HAVE_HWLOC

namespace coll {
namespace topo {

bool discoverWithHwloc(Topology*, std::string* why) {
  *why = "built without hwloc";
  return false;
}

}  // namespace topo
}  // namespace coll

#endif
