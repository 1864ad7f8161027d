// The part of socket_util.h that picks which local address a server binds and advertises
// (COLL_SOCKET_IFNAME), kept apart from the socket I/O helpers.
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "bootstrap/socket_util.h"
#include "src/error.h"
#include "src/logging.h"

namespace coll {
namespace bootstrap {

std::vector<InterfaceAddress> listInterfaces() {
  ifaddrs* list = nullptr;
  COLL_SYSCHECK(getifaddrs(&list), "getifaddrs()");
  std::vector<InterfaceAddress> result;
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || (ifa->ifa_flags & IFF_UP) == 0) continue;
    int family = ifa->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (family == AF_INET6) {
      // Link-local addresses need a scope id on every peer; they are never a useful rendezvous.
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(ifa->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;
    }
    SocketAddress address;
    address.length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    memcpy(&address.storage, ifa->ifa_addr, address.length);
    InterfaceAddress entry;
    entry.name = ifa->ifa_name;
    entry.address = address.host();
    entry.family = family;
    entry.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
    result.push_back(entry);
  }
  freeifaddrs(list);
  return result;
}

namespace {

bool nameMatches(const std::string& name, const std::vector<std::string>& patterns, bool exact) {
  for (const std::string& p : patterns) {
    if (exact ? name == p : name.compare(0, p.size(), p) == 0) return true;
  }
  return false;
}

}  // namespace

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
  std::string list = ifnameSpec;
  bool exclude = list[0] == '^';
  if (exclude) list.erase(0, 1);
  bool exact = !list.empty() && list[0] == '=';
  if (exact) list.erase(0, 1);
  std::vector<std::string> patterns;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = std::min(list.find(',', start), list.size());
    if (end > start) patterns.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  const InterfaceAddress* best = nullptr;
  for (const auto& i : interfaces) {
    if (nameMatches(i.name, patterns, exact) == exclude) continue;
    if (best == nullptr || (best->family != AF_INET && i.family == AF_INET)) best = &i;
  }
  if (best != nullptr) return best->address;
  std::string available;
  for (const auto& i : interfaces) available += (available.empty() ? "" : ", ") + i.name + "=" + i.address;
  throwError(collInvalidUsage, "COLL_SOCKET_IFNAME='%s' matches no up interface (available: %s)", ifnameSpec.c_str(),
             available.empty() ? "none" : available.c_str());
}

std::string defaultServerAddress() {
  const char* spec = getenv("COLL_SOCKET_IFNAME");
  std::string address = chooseInterfaceAddress(listInterfaces(), spec != nullptr ? spec : "");
  COLL_INFO(kBootstrap, "server address %s (COLL_SOCKET_IFNAME=%s)", address.c_str(), spec != nullptr ? spec : "");
  return address;
}

}  // namespace bootstrap
}  // namespace coll
