// Network interfaces for the topology: common/net_interfaces.h's listing grouped by name, with
// the PCI device sysfs links each one to (none for loopback, veth, bridges: those are virtual),
// and the two ways of picking the interface a job's traffic uses (by COLL_SOCKET_IFNAME, or by
// the route to MASTER_ADDR).
#include <unistd.h>

#include <map>

#include "common/error.h"
#include "common/net_interfaces.h"
#include "common/socket.h"
#include "topo/sysfs_read.h"
#include "topo/topology.h"

namespace coll {
namespace topo {
namespace {

// "fe80::1%eth0" and "fe80::1" are one address as far as matching a route goes.
std::string withoutScope(const std::string& address) { return address.substr(0, address.find('%')); }

}  // namespace

std::vector<NetInterface> listNetInterfaces() {
  std::vector<InterfaceEntry> entries;
  try {
    entries = listInterfaceEntries();
  } catch (const CollError&) {
    return {};  // a topology without interfaces: binding near a NIC then says it found none
  }
  std::map<std::string, NetInterface> byName;
  for (const InterfaceEntry& entry : entries) {
    NetInterface& interface = byName[entry.name];
    interface.name = entry.name;
    interface.up = entry.up;
    interface.loopback = entry.loopback;
    if (!entry.address.empty()) interface.addresses.push_back(entry.address);
  }
  std::vector<NetInterface> interfaces;
  for (auto& entry : byName) {
    NetInterface& interface = entry.second;
    // Only interfaces backed by hardware have a device link in sysfs.
    const std::string deviceLink = "/sys/class/net/" + interface.name + "/device";
    interface.isVirtual = access(deviceLink.c_str(), F_OK) != 0;
    if (!interface.isVirtual) interface.pciBusId = pciBusIdBehind(deviceLink);
    interfaces.push_back(std::move(interface));
  }
  return interfaces;
}

std::string interfaceReaching(const std::vector<NetInterface>& interfaces, const std::string& host) {
  if (host.empty()) return "";
  std::string local;
  try {
    local = withoutScope(localAddressRoutingTo(host));
  } catch (const CollError&) {
    return "";  // the host does not resolve, or no route reaches it
  }
  for (const NetInterface& interface : interfaces) {
    for (const std::string& address : interface.addresses) {
      if (withoutScope(address) == local) return interface.name;
    }
  }
  return "";
}

std::string interfaceMatching(const std::vector<NetInterface>& interfaces, const std::string& spec) {
  NameSelection selection = parseInterfaceSpec(spec);
  const NetInterface* best = nullptr;
  auto preference = [](const NetInterface& i) { return (i.up ? 2 : 0) + (i.pciBusId.empty() ? 0 : 1); };
  for (const NetInterface& interface : interfaces) {
    if (!selection.selects(interface.name)) continue;
    if (best == nullptr || preference(interface) > preference(*best)) best = &interface;
  }
  return best != nullptr ? best->name : "";
}

}  // namespace topo
}  // namespace coll
