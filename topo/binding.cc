#include "topo/binding.h"

#include <algorithm>

namespace coll {
namespace topo {

namespace {

// The cores a rank may get, as their allowed PUs, in topology order. Allowed CPUs that no core
// lists (an incomplete topology) count as cores of their own, so nothing allowed is lost.
std::vector<CpuList> usableCores(const Topology& topology, const CpuList& allowed) {
  std::vector<CpuList> cores;
  CpuList covered;
  for (const Core& core : topology.cores) {
    CpuList pus = intersectCpus(core.pus, allowed);
    if (pus.empty()) continue;
    cores.push_back(pus);
    covered = uniteCpus(covered, pus);
  }
  for (int cpu : allowed) {
    if (!containsCpu(covered, cpu)) cores.push_back({cpu});
  }
  return cores;
}

std::vector<CpuList> coresWithin(const std::vector<CpuList>& cores, const CpuList& region) {
  std::vector<CpuList> inside;
  for (const CpuList& core : cores) {
    CpuList pus = intersectCpus(core, region);
    if (!pus.empty()) inside.push_back(pus);
  }
  return inside;
}

const CpuList& pick(const std::vector<CpuList>& choices, int index) {
  return choices[static_cast<size_t>(index) % choices.size()];
}

// Share `index` of `choices` among `sharers`: choices.size() / sharers consecutive ones (at least
// one), wrapping around.
CpuList pickShare(const std::vector<CpuList>& choices, int index, int sharers) {
  const int each = std::max(1, static_cast<int>(choices.size()) / std::max(sharers, 1));
  CpuList cpus;
  for (int j = 0; j < each; ++j) cpus = uniteCpus(cpus, pick(choices, index * each + j));
  return cpus;
}

std::string nodeSuffix(int node) { return node >= 0 ? " on NUMA " + std::to_string(node) : ""; }

class BindingRules {
 public:
  BindingRules(const Topology& topology, const BindRequest& request)
      : topology_(topology),
        request_(request),
        allowed_(request.allowed.empty() ? topology.allCpus() : request.allowed),
        cores_(usableCores(topology, allowed_)),
        gpus_(topology.devicesOfKind(PciKind::kGpu)) {
    // Each GPU's region, and for each GPU the first GPU with the same region: ranks are then
    // compared by a number, which keeps thousands of local ranks cheap.
    for (const PciDevice* gpu : gpus_) {
      gpuRegions_.push_back(intersectCpus(cpusNear(topology, *gpu), allowed_));
      size_t same = 0;
      while (gpuRegions_[same] != gpuRegions_.back()) ++same;
      gpuRegionIds_.push_back(same);
    }
  }

  BindChoice choose() const {
    BindChoice choice;
    if (request_.mode == BindMode::kNone || cores_.empty() || request_.localRank < 0) return choice;
    if (!gpus_.empty() && nearGpu(&choice)) return choice;
    if (nearNic(&choice)) return choice;
    roundRobin(&choice);
    return choice;
  }

 private:
  // Rank `index` of the `sharers` that draw from `choices`: one core (core), or its share (cores).
  CpuList take(const std::vector<CpuList>& choices, int index, int sharers) const {
    return request_.mode == BindMode::kCores ? pickShare(choices, index, sharers) : pick(choices, index);
  }

  const PciDevice* nicDevice() const {
    const NetInterface* nic = topology_.interface(request_.nicName);
    if (nic == nullptr || nic->isVirtual) return nullptr;
    return topology_.pciDevice(nic->pciBusId);
  }

  bool nearGpu(BindChoice* choice) const {
    int gpu = request_.localRank % static_cast<int>(gpus_.size());
    const CpuList& region = gpuRegions_[static_cast<size_t>(gpu)];
    if (region.empty()) return false;
    const PciDevice& device = *gpus_[static_cast<size_t>(gpu)];
    if (request_.mode == BindMode::kNuma) {
      choice->cpus = region;
    } else {
      // Lower local ranks whose GPUs share this region already hold its first cores.
      int before = 0;
      int sharers = 0;
      for (int r = 0; r < request_.localRanks; ++r) {
        const bool same =
            gpuRegionIds_[static_cast<size_t>(r) % gpus_.size()] == gpuRegionIds_[static_cast<size_t>(gpu)];
        before += same && r < request_.localRank;
        sharers += same;
      }
      choice->cpus = take(coresWithin(cores_, region), before, sharers);
    }
    choice->gpuIndex = gpu;
    choice->reason = std::string(bindModeName(request_.mode)) + ", near GPU" + std::to_string(gpu) + " " + device.busId;
    const PciDevice* nic = nicDevice();
    if (nic != nullptr && intersectCpus(cpusNear(topology_, *nic), allowed_) == region) {
      choice->reason += " and NIC " + request_.nicName;
    }
    choice->reason += nodeSuffix(device.numaNode);
    return true;
  }

  bool nearNic(BindChoice* choice) const {
    const PciDevice* device = nicDevice();
    if (device == nullptr) return false;
    CpuList region = intersectCpus(cpusNear(topology_, *device), allowed_);
    if (region.empty()) return false;
    if (request_.mode == BindMode::kNuma) {
      choice->cpus = region;
    } else {
      std::vector<CpuList> ordered = coresWithin(cores_, region);
      for (const CpuList& core : cores_) {
        if (intersectCpus(core, region).empty()) ordered.push_back(core);
      }
      choice->cpus = take(ordered, request_.localRank, request_.localRanks);
    }
    choice->reason = std::string(bindModeName(request_.mode)) + ", near NIC " + request_.nicName + " " + device->busId +
                     nodeSuffix(device->numaNode);
    return true;
  }

  void roundRobin(BindChoice* choice) const {
    if (request_.mode == BindMode::kCore || request_.mode == BindMode::kCores) {
      choice->cpus = take(cores_, request_.localRank, request_.localRanks);
      choice->reason =
          std::string(bindModeName(request_.mode)) + ", round-robin over " + std::to_string(cores_.size()) + " cores";
      return;
    }
    std::vector<CpuList> nodes;
    for (const NumaNode& node : topology_.numaNodes) {
      CpuList cpus = intersectCpus(node.cpus, allowed_);
      if (!cpus.empty()) nodes.push_back(cpus);
    }
    if (nodes.empty()) nodes.push_back(allowed_);  // no NUMA information: one node of everything
    choice->cpus = pick(nodes, request_.localRank);
    choice->reason =
        "numa, round-robin over " + std::to_string(nodes.size()) + " NUMA node" + (nodes.size() == 1 ? "" : "s");
  }

  const Topology& topology_;
  const BindRequest& request_;
  const CpuList allowed_;
  const std::vector<CpuList> cores_;
  const std::vector<const PciDevice*> gpus_;
  std::vector<CpuList> gpuRegions_;   // the allowed CPUs near each GPU
  std::vector<size_t> gpuRegionIds_;  // per GPU: the first GPU whose region equals its own
};

}  // namespace

BindChoice chooseBinding(const Topology& topology, const BindRequest& request) {
  return BindingRules(topology, request).choose();
}

const char* bindModeName(BindMode mode) {
  switch (mode) {
    case BindMode::kCore:
      return "core";
    case BindMode::kCores:
      return "cores";
    case BindMode::kNuma:
      return "numa";
    case BindMode::kNone:
      break;
  }
  return "none";
}

}  // namespace topo
}  // namespace coll
