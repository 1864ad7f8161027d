// What this host is made of, as far as placing ranks and choosing transports cares: packages,
// NUMA nodes, cores, the PCI devices that matter (GPUs and NICs, with the NUMA node each hangs
// off), and the network interfaces. A plain value: discovered once, then only read, so that the
// binding and transport choices built on it are pure functions that tests can feed by hand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topo/cpu_list.h"

namespace coll {
namespace topo {

struct Package {
  int osIndex = -1;  // physical_package_id
  CpuList cpus;
};

struct NumaNode {
  int osIndex = -1;  // the N of /sys/devices/system/node/nodeN
  CpuList cpus;
  uint64_t memoryBytes = 0;
};

struct Core {
  int osIndex = -1;   // core_id; only unique within a package
  int package = -1;   // Package::osIndex
  int numaNode = -1;  // NumaNode::osIndex of the node holding its PUs
  CpuList pus;        // its hardware threads
};

enum class PciKind { kGpu, kNic, kOther };

struct PciDevice {
  std::string busId;  // "0000:3b:00.0" (domain:bus:device.function)
  uint16_t vendorId = 0;
  uint16_t deviceId = 0;
  uint16_t classId = 0;  // base class << 8 | subclass: 0x0200 Ethernet, 0x0207 InfiniBand, 0x0302 3D controller
  PciKind kind = PciKind::kOther;
  int numaNode = -1;                 // the node it is attached to; -1 when unknown or not a single node
  CpuList localCpus;                 // the CPUs nearest to it; empty when unknown
  std::vector<std::string> osNames;  // what the OS calls it: eth0, mlx5_0, cuda0, nvml0 ...
};

struct NetInterface {
  std::string name;
  std::vector<std::string> addresses;  // numeric IPv4 and IPv6 addresses
  bool up = false;
  bool loopback = false;
  bool isVirtual = false;  // no device behind it: loopback, veth, bridge, tun, ifb ...
  std::string pciBusId;    // the PCI device behind it; "" when virtual or not on PCI
};

struct Topology {
  std::string source;  // "hwloc" or "sysfs"
  std::string hostname;
  std::vector<Package> packages;         // ascending osIndex
  std::vector<NumaNode> numaNodes;       // ascending osIndex; at least one when discovery worked
  std::vector<Core> cores;               // in package, then PU order
  std::vector<PciDevice> pciDevices;     // ascending bus id
  std::vector<NetInterface> interfaces;  // in name order
  CpuList processCpus;                   // this process's affinity when it was discovered: its binding

  CpuList allCpus() const;  // every online PU
  const NumaNode* numaNode(int osIndex) const;
  const PciDevice* pciDevice(const std::string& busId) const;
  const NetInterface* interface(const std::string& name) const;
  std::vector<const PciDevice*> devicesOfKind(PciKind kind) const;  // in bus id order
};

enum class TopologySource { kAuto, kHwloc, kSysfs };

// Discovers this host. kAuto uses hwloc when the build has it (COLL_HAVE_HWLOC) and falls back
// to sysfs when hwloc fails; kHwloc returns a topology with an empty source when the build has
// no hwloc or it fails. Never throws for a missing file: what cannot be read is left empty.
Topology discoverTopology(TopologySource source = TopologySource::kAuto);

// Whether this build can use hwloc.
bool haveHwloc();

// The up-or-down network interfaces from getifaddrs, with the PCI device behind each from sysfs.
std::vector<NetInterface> listNetInterfaces();

// The interface this host would use to reach `host` (a name or numeric address), from the
// kernel's routing table; "" when it cannot be resolved or routed.
std::string interfaceReaching(const std::vector<NetInterface>& interfaces, const std::string& host);

// The interface a COLL_SOCKET_IFNAME-style spec selects ("eth,ib": name prefixes; "=eth0":
// exact names; "^docker,lo": all but these), preferring up ones backed by a PCI device; ""
// when none matches.
std::string interfaceMatching(const std::vector<NetInterface>& interfaces, const std::string& spec);

// The CPUs nearest to a device: its NUMA node's, else the CPUs hwloc or sysfs reported local to
// it, else every CPU (nothing known: no CPU is nearer than another).
CpuList cpusNear(const Topology& topology, const PciDevice& device);
// The same for an interface's PCI device; every CPU for a virtual one.
CpuList cpusNear(const Topology& topology, const NetInterface& interface);

// "GPU", "NIC" or "other".
const char* pciKindName(PciKind kind);
// "network", "display", "storage", ...: the PCI base class in words.
const char* pciClassName(uint16_t classId);

}  // namespace topo
}  // namespace coll
