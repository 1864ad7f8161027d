// Reading the small text files of sysfs. Every reader treats a missing or unreadable file as
// "unknown" (containers and VMs hide parts of /sys), never as an error.
#pragma once

#include <string>
#include <vector>

namespace coll {
namespace topo {

// The first line of a file, without its newline; `fallback` when it cannot be read.
std::string readFirstLine(const std::string& path, const std::string& fallback = "");

// A number in a sysfs file ("0x10de", "-1", "42"); `fallback` when absent or malformed.
long readNumber(const std::string& path, long fallback);

// The entries of a directory (without . and ..), sorted; empty when it cannot be read.
std::vector<std::string> listDirectory(const std::string& path);

// "0000:3b:00.0" for a PCI bus id (domain:bus:device.function in hex).
bool isPciBusId(const std::string& name);

// The PCI device a sysfs device path lies under, e.g. /sys/class/net/eth0/device ->
// .../0000:00:03.0/virtio2 -> "0000:00:03.0" (the nearest PCI component); "" when none.
std::string pciBusIdBehind(const std::string& sysfsPath);

}  // namespace topo
}  // namespace coll
