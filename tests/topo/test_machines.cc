#include "test_machines.h"

namespace coll {
namespace topo {
namespace testing {

namespace {

PciDevice device(const char* busId, PciKind kind, uint16_t classId, int node, const CpuList& cpus,
                 std::vector<std::string> names) {
  PciDevice d;
  d.busId = busId;
  d.kind = kind;
  d.classId = classId;
  d.vendorId = kind == PciKind::kGpu ? 0x10de : 0x15b3;
  d.numaNode = node;
  d.localCpus = cpus;
  d.osNames = std::move(names);
  return d;
}

NetInterface interface(const std::string& name, const std::string& busId) {
  NetInterface i;
  i.name = name;
  i.up = true;
  i.isVirtual = busId.empty();
  i.loopback = name == "lo";
  i.pciBusId = busId;
  return i;
}

}  // namespace

Topology twoSocketMachine(int gpusPerSocket, bool nics) {
  Topology t;
  t.source = "hand-built";
  t.hostname = "twosocket";
  for (int socket = 0; socket < 2; ++socket) {
    CpuList cpus;
    for (int core = 0; core < 4; ++core) {
      int first = socket * 4 + core;
      t.cores.push_back({core, socket, socket, {first, first + 8}});
      cpus = uniteCpus(cpus, {first, first + 8});
    }
    t.packages.push_back({socket, cpus});
    t.numaNodes.push_back({socket, cpus, 64ull << 30});
  }
  const char* gpuBuses[2][2] = {{"0000:1b:00.0", "0000:3b:00.0"}, {"0000:86:00.0", "0000:af:00.0"}};
  for (int socket = 0; socket < 2; ++socket) {
    for (int g = 0; g < gpusPerSocket && g < 2; ++g) {
      t.pciDevices.push_back(device(gpuBuses[socket][g], PciKind::kGpu, 0x0302, socket, t.numaNodes[socket].cpus, {}));
    }
  }
  t.interfaces = {interface("docker0", ""), interface("lo", "")};
  if (nics) {
    t.pciDevices.push_back(device("0000:5e:00.0", PciKind::kNic, 0x0207, 0, t.numaNodes[0].cpus, {"mlx5_0", "ib0"}));
    t.pciDevices.push_back(device("0000:d8:00.0", PciKind::kNic, 0x0207, 1, t.numaNodes[1].cpus, {"mlx5_1", "ib1"}));
    t.interfaces.push_back(interface("ib0", "0000:5e:00.0"));
    t.interfaces.push_back(interface("ib1", "0000:d8:00.0"));
  }
  t.processCpus = t.allCpus();
  return t;
}

Topology laptop(int cores) {
  Topology t;
  t.source = "hand-built";
  CpuList cpus;
  for (int c = 0; c < cores; ++c) {
    t.cores.push_back({c, 0, 0, {c}});
    cpus.push_back(c);
  }
  t.packages.push_back({0, cpus});
  t.numaNodes.push_back({0, cpus, 16ull << 30});
  t.interfaces = {interface("lo", "")};
  t.processCpus = cpus;
  return t;
}

}  // namespace testing
}  // namespace topo
}  // namespace coll
