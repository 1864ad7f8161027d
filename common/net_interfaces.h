// This host's network interfaces, from one getifaddrs() listing, and COLL_SOCKET_IFNAME: which
// of them a rank's sockets use. The rendezvous store, the socket transport and the topology
// (topo/) all read interfaces through here, so the setting means the same thing everywhere.
#pragma once

#include <string>
#include <vector>

#include "common/list_spec.h"

namespace coll {

// One line of getifaddrs(): an interface and one of its addresses (empty for the entries that
// carry none, such as the link-layer one every interface has).
struct InterfaceEntry {
  std::string name;     // e.g. "eth0"
  std::string address;  // numeric, e.g. "10.0.0.2" or "fe80::1%eth0"; "" for none
  int family = 0;       // AF_INET, AF_INET6, or 0 without an address
  bool up = false;
  bool loopback = false;
  bool linkLocal = false;  // an IPv6 link-local address (needs a scope id on every peer)
};

// Every entry, in getifaddrs order. Throws collSystemError when the listing fails.
std::vector<InterfaceEntry> listInterfaceEntries();

struct InterfaceAddress {
  std::string name;     // e.g. "eth0"
  std::string address;  // numeric
  int family = 0;       // AF_INET or AF_INET6
  bool loopback = false;
};

// Up interfaces with an IPv4 or a non-link-local IPv6 address, in getifaddrs order: the
// addresses a server may bind and advertise.
std::vector<InterfaceAddress> listInterfaces();

// This host's name (gethostname), or "" when it cannot be read.
std::string localHostName();

// A COLL_SOCKET_IFNAME value: a comma list of interface-name prefixes; a leading '^' excludes
// the listed names instead, a leading '=' (after any '^') makes them exact names.
NameSelection parseInterfaceSpec(const std::string& spec);

// Picks the address a server should bind and advertise: among the interfaces `ifnameSpec`
// selects, IPv4 wins over IPv6. Empty spec: the first non-loopback IPv4 interface, else the first
// loopback address. Throws collInvalidUsage when the spec matches nothing (the message lists the
// interfaces).
std::string chooseInterfaceAddress(const std::vector<InterfaceAddress>& interfaces, const std::string& ifnameSpec);

}  // namespace coll
