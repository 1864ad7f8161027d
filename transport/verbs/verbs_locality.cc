#include "transport/verbs/verbs_locality.h"

#include "topo/sysfs_read.h"

namespace coll {
namespace transport {
namespace {

// /sys of /sys/class/infiniband/mlx5_0; "" when the path does not have that shape.
std::string sysfsRootOf(const std::string& ibdevPath) {
  const std::string marker = "/class/infiniband/";
  const size_t at = ibdevPath.rfind(marker);
  return at == std::string::npos ? "" : ibdevPath.substr(0, at);
}

}  // namespace

VerbsDevicePlace verbsDevicePlace(const std::string& ibdevPath) {
  VerbsDevicePlace place;
  if (ibdevPath.empty()) return place;
  const std::string device = ibdevPath + "/device";
  place.pciBusId = topo::pciBusIdBehind(device);
  // sysfs writes -1 where the platform has no NUMA information.
  const long node = topo::readNumber(device + "/numa_node", -1);
  place.numaNode = node >= 0 && node < (1 << 16) ? static_cast<int>(node) : -1;
  place.localCpus = topo::parseCpuList(topo::readFirstLine(device + "/local_cpulist"));
  const std::string root = sysfsRootOf(ibdevPath);
  if (place.localCpus.empty() && place.numaNode >= 0 && !root.empty())
    place.localCpus = topo::parseCpuList(
        topo::readFirstLine(root + "/devices/system/node/node" + std::to_string(place.numaNode) + "/cpulist"));
  return place;
}

VerbsNearness verbsNearness(const VerbsDevicePlace& place, const topo::CpuList& binding) {
  if (place.localCpus.empty() || binding.empty()) return VerbsNearness::kUnknown;
  if (topo::containsAllCpus(place.localCpus, binding)) return VerbsNearness::kNear;
  // A rank bound across nodes (or not bound) is partly near every device with local CPUs in it.
  return topo::intersectCpus(place.localCpus, binding).empty() ? VerbsNearness::kFar : VerbsNearness::kPartly;
}

const char* verbsNearnessName(VerbsNearness nearness) {
  switch (nearness) {
    case VerbsNearness::kNear:
      return "near";
    case VerbsNearness::kPartly:
      return "partly near";
    case VerbsNearness::kFar:
      return "far";
    default:
      return "unknown";
  }
}

std::string describeVerbsDevicePlace(const VerbsDevicePlace& place) {
  std::string text;
  auto add = [&text](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  if (!place.pciBusId.empty()) add("PCI " + place.pciBusId);
  if (place.numaNode >= 0) add("NUMA node " + std::to_string(place.numaNode));
  if (!place.localCpus.empty()) add("CPUs " + topo::formatCpuList(place.localCpus));
  return text.empty() ? "place unknown" : text;
}

}  // namespace transport
}  // namespace coll
