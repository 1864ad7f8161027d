#include "common/net_interfaces.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <climits>

#include "common/error.h"

namespace coll {
namespace {

std::string numericHost(const sockaddr* address) {
  socklen_t length = address->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  char host[NI_MAXHOST] = {};
  if (getnameinfo(address, length, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0) return "";
  return host;
}

}  // namespace

std::vector<InterfaceEntry> listInterfaceEntries() {
  ifaddrs* list = nullptr;
  COLL_SYSCHECK(getifaddrs(&list), "getifaddrs()");
  std::vector<InterfaceEntry> entries;
  for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    InterfaceEntry entry;
    entry.name = ifa->ifa_name;
    entry.up = (ifa->ifa_flags & IFF_UP) != 0;
    entry.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
    const sockaddr* address = ifa->ifa_addr;
    if (address != nullptr && (address->sa_family == AF_INET || address->sa_family == AF_INET6)) {
      entry.family = address->sa_family;
      entry.address = numericHost(address);
      entry.linkLocal =
          entry.family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr);
      if (entry.address.empty()) entry.family = 0;
    }
    entries.push_back(entry);
  }
  freeifaddrs(list);
  return entries;
}

std::vector<InterfaceAddress> listInterfaces() {
  std::vector<InterfaceAddress> result;
  for (const InterfaceEntry& entry : listInterfaceEntries()) {
    // Link-local addresses need a scope id on every peer; they are never a useful rendezvous.
    if (!entry.up || entry.family == 0 || entry.linkLocal) continue;
    result.push_back({entry.name, entry.address, entry.family, entry.loopback});
  }
  return result;
}

NameSelection parseInterfaceSpec(const std::string& spec) {
  return NameSelection::parse(spec, NameSelection::Match::kPrefix);
}

std::string chooseInterfaceAddress(const std::vector<InterfaceAddress>& interfaces, const std::string& ifnameSpec) {
  if (ifnameSpec.empty()) {
    for (const auto& i : interfaces)
      if (!i.loopback && i.family == AF_INET) return i.address;
    for (const auto& i : interfaces)
      if (i.loopback && i.family == AF_INET) return i.address;
    for (const auto& i : interfaces)
      if (i.loopback) return i.address;
    return "127.0.0.1";
  }
  NameSelection selection = parseInterfaceSpec(ifnameSpec);
  const InterfaceAddress* best = nullptr;
  for (const auto& i : interfaces) {
    if (!selection.selects(i.name)) continue;
    if (best == nullptr || (best->family != AF_INET && i.family == AF_INET)) best = &i;
  }
  if (best != nullptr) return best->address;
  std::string available;
  for (const auto& i : interfaces) available += (available.empty() ? "" : ", ") + i.name + "=" + i.address;
  throwError(collInvalidUsage, "COLL_SOCKET_IFNAME='%s' matches no up interface (available: %s)", ifnameSpec.c_str(),
             available.empty() ? "none" : available.c_str());
}

std::string localHostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

}  // namespace coll
