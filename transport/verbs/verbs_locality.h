// Where an RDMA device sits on this host, and how near it is to a rank: what the verbs transport
// uses to pick, among the ports COLL_IB_HCA selects, the one nearest to the rank (as NCCL does).
// The buffers verbs moves are host memory, touched by the rank's CPUs, so nearness is measured
// from the rank's CPU binding: a device whose local CPUs hold the binding sits on the rank's NUMA
// node, one that shares none of them sits across the inter-socket link. Read from sysfs as
// topo/ reads NICs and GPUs (its readers), under the device's ibdev_path, so that a test double
// can point it at a made-up sysfs tree. Nothing here needs libibverbs: testable anywhere.
#pragma once

#include <string>

#include "topo/cpu_list.h"

namespace coll {
namespace transport {

struct VerbsDevicePlace {
  std::string pciBusId;     // "0000:3b:00.0"; "" when not on PCI or unknown
  int numaNode = -1;        // -1 when unknown (or the platform has one node and says so)
  topo::CpuList localCpus;  // empty when unknown
};

// `ibdevPath` is the device's class directory (ibv_device::ibdev_path, e.g.
// /sys/class/infiniband/mlx5_0): its `device` link leads to the PCI function, which holds
// numa_node and local_cpulist. Without local_cpulist, the CPUs of its NUMA node
// (<sysfs>/devices/system/node/nodeN/cpulist, <sysfs> being ibdevPath less class/infiniband/NAME).
// Whatever cannot be read stays unknown.
VerbsDevicePlace verbsDevicePlace(const std::string& ibdevPath);

// How near a device is to a rank bound to `binding`, best first. Unknown sits between: a device
// we know nothing of is not preferred to one known near, nor refused for one known far.
enum class VerbsNearness { kNear = 0, kPartly = 1, kUnknown = 2, kFar = 3 };
VerbsNearness verbsNearness(const VerbsDevicePlace& place, const topo::CpuList& binding);
const char* verbsNearnessName(VerbsNearness nearness);

// "PCI 0000:3b:00.0, NUMA node 0, CPUs 0-15" (the parts known), for the INFO line.
std::string describeVerbsDevicePlace(const VerbsDevicePlace& place);

}  // namespace transport
}  // namespace coll
