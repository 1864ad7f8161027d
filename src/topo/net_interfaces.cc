// Network interfaces: the names and addresses getifaddrs gives, the PCI device sysfs links each
// one to (none for loopback, veth, bridges: those are virtual), and the two ways of picking the
// interface a job's traffic uses (by COLL_SOCKET_IFNAME, or by the route to MASTER_ADDR).
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <map>

#include "src/topo/sysfs_read.h"
#include "src/topo/topology.h"

namespace coll {
namespace topo {
namespace {

std::string numericHost(const sockaddr* address) {
  socklen_t length = address->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  char host[NI_MAXHOST] = {};
  if (getnameinfo(address, length, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0) return "";
  return host;
}

// "fe80::1%eth0" and "fe80::1" are one address as far as matching a route goes.
std::string withoutScope(const std::string& address) { return address.substr(0, address.find('%')); }

// A COLL_SOCKET_IFNAME value: "eth,ib" (name prefixes), "=eth0" (exact names), a leading "^"
// for "all interfaces but these".
struct InterfaceSpec {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;

  explicit InterfaceSpec(std::string text) {
    if (!text.empty() && text[0] == '^') {
      exclude = true;
      text.erase(0, 1);
    }
    if (!text.empty() && text[0] == '=') {
      exact = true;
      text.erase(0, 1);
    }
    for (size_t start = 0; start <= text.size();) {
      size_t comma = text.find(',', start);
      if (comma == std::string::npos) comma = text.size();
      if (comma > start) names.push_back(text.substr(start, comma - start));
      start = comma + 1;
    }
  }

  bool selects(const std::string& interface) const {
    bool named = false;
    for (const std::string& name : names) {
      named = named || (exact ? interface == name : interface.compare(0, name.size(), name) == 0);
    }
    return named != exclude;
  }
};

}  // namespace

std::vector<NetInterface> listNetInterfaces() {
  std::map<std::string, NetInterface> byName;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    NetInterface& interface = byName[entry->ifa_name];
    interface.name = entry->ifa_name;
    interface.up = (entry->ifa_flags & IFF_UP) != 0;
    interface.loopback = (entry->ifa_flags & IFF_LOOPBACK) != 0;
    const sockaddr* address = entry->ifa_addr;
    if (address == nullptr || (address->sa_family != AF_INET && address->sa_family != AF_INET6)) continue;
    std::string host = numericHost(address);
    if (!host.empty()) interface.addresses.push_back(host);
  }
  freeifaddrs(list);
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
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* resolved = nullptr;
  if (host.empty() || getaddrinfo(host.c_str(), "9", &hints, &resolved) != 0) return "";
  std::string local;
  for (const addrinfo* candidate = resolved; candidate != nullptr && local.empty(); candidate = candidate->ai_next) {
    // Connecting a UDP socket only asks the kernel for a route and a source address; nothing is sent.
    int fd = socket(candidate->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage source{};
    socklen_t length = sizeof(source);
    if (connect(fd, candidate->ai_addr, candidate->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&source), &length) == 0) {
      local = withoutScope(numericHost(reinterpret_cast<const sockaddr*>(&source)));
    }
    close(fd);
  }
  freeaddrinfo(resolved);
  if (local.empty()) return "";
  for (const NetInterface& interface : interfaces) {
    for (const std::string& address : interface.addresses) {
      if (withoutScope(address) == local) return interface.name;
    }
  }
  return "";
}

std::string interfaceMatching(const std::vector<NetInterface>& interfaces, const std::string& spec) {
  InterfaceSpec selection(spec);
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
