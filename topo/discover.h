// The two ways discoverTopology() fills a Topology, and what they share. Internal to topo/.
#pragma once

#include <string>

#include "topo/topology.h"

namespace coll {
namespace topo {

// hwloc (with PCI and OS devices). False with a reason when hwloc is not built in or fails.
bool discoverWithHwloc(Topology* topology, std::string* why);

// /sys/devices/system/{cpu,node} and /sys/bus/pci/devices: the same facts hwloc would give,
// minus what only its plugins know (CUDA and NVML device names).
void discoverWithSysfs(Topology* topology);

// Sorting, the cross references a source may not fill (a core's NUMA node, a device's node from
// its local CPUs, interface names on their PCI devices, NIC classification), the interfaces and
// this process's affinity.
void finishTopology(Topology* topology);

// GPU, NIC or other from a PCI class and vendor (OS device names can promote it later).
PciKind classifyPci(uint16_t classId, uint16_t vendorId);

}  // namespace topo
}  // namespace coll
