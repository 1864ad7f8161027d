#include "topo/gpu_topology.h"

#include <dlfcn.h>

#include <mutex>

namespace coll {
namespace topo {
namespace {

GpuLinkKind kindOfAncestor(int level) {
  switch (level) {
    case nvml::kTopologyInternal:
      return GpuLinkKind::kBoard;
    case nvml::kTopologySingle:
    case nvml::kTopologyMultiple:
      return GpuLinkKind::kPcieSwitch;
    case nvml::kTopologyHostBridge:
      return GpuLinkKind::kHostBridge;
    case nvml::kTopologyNode:
      return GpuLinkKind::kNumaNode;
    case nvml::kTopologySystem:
      return GpuLinkKind::kSystem;
    default:
      return GpuLinkKind::kUnknown;
  }
}

bool statusOk(const NvmlApi& api, void* a, void* b, int capability) {
  int status = -1;
  return api.p2pStatus != nullptr && api.p2pStatus(a, b, capability, &status) == nvml::kSuccess &&
         status == nvml::kP2pStatusOk;
}

GpuLink linkBetween(const NvmlApi& api, void* a, void* b) {
  GpuLink link;
  if (a == nullptr || b == nullptr) return link;
  link.peerAccess = statusOk(api, a, b, nvml::kP2pCapsRead);
  if (statusOk(api, a, b, nvml::kP2pCapsNvlink)) {
    link.kind = GpuLinkKind::kNvlink;
    return link;
  }
  int level = -1;
  if (api.commonAncestor != nullptr && api.commonAncestor(a, b, &level) == nvml::kSuccess)
    link.kind = kindOfAncestor(level);
  return link;
}

int activeNvlinksOf(const NvmlApi& api, void* device) {
  int active = 0;
  for (unsigned l = 0; device != nullptr && api.nvlinkState != nullptr && l < nvml::kMaxNvlinks; ++l) {
    int state = 0;
    // Links a GPU lacks answer with an error: they are not up.
    if (api.nvlinkState(device, l, &state) == nvml::kSuccess && state == nvml::kFeatureEnabled) ++active;
  }
  return active;
}

template <typename T>
bool bind(void* library, const char* name, T* slot) {
  *slot = reinterpret_cast<T>(dlsym(library, name));
  return *slot != nullptr;
}

}  // namespace

const char* gpuLinkKindName(GpuLinkKind kind) {
  switch (kind) {
    case GpuLinkKind::kSame:
      return "same GPU";
    case GpuLinkKind::kNvlink:
      return "NVLink";
    case GpuLinkKind::kBoard:
      return "one board";
    case GpuLinkKind::kPcieSwitch:
      return "PCIe switch";
    case GpuLinkKind::kHostBridge:
      return "PCIe host bridge";
    case GpuLinkKind::kNumaNode:
      return "NUMA node";
    case GpuLinkKind::kSystem:
      return "across sockets";
    default:
      return "unknown";
  }
}

bool loadNvml(NvmlApi* api, std::string* why) {
  static std::mutex mutex;
  static NvmlApi loaded;
  static std::string failure;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (!tried) {
    tried = true;
    void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      failure = std::string("NVML not loaded: ") + dlerror();
    } else if (!bind(library, "nvmlInit_v2", &loaded.init) ||
               !bind(library, "nvmlDeviceGetHandleByPciBusId_v2", &loaded.handleByBusId) ||
               !bind(library, "nvmlDeviceGetTopologyCommonAncestor", &loaded.commonAncestor) ||
               !bind(library, "nvmlDeviceGetP2PStatus", &loaded.p2pStatus) ||
               !bind(library, "nvmlDeviceGetNvLinkState", &loaded.nvlinkState)) {
      failure = "NVML lacks a function this library uses (a driver older than CUDA 11?)";
      loaded = NvmlApi{};
    } else if (loaded.init() != nvml::kSuccess) {
      failure = "nvmlInit_v2 failed (no driver running?)";
      loaded = NvmlApi{};
    }
  }
  if (!failure.empty()) {
    if (why != nullptr) *why = failure;
    return false;
  }
  *api = loaded;
  return true;
}

GpuTopology describeGpus(const std::vector<std::string>& busIds, const NvmlApi* api, const std::string& why) {
  GpuTopology t;
  const size_t n = busIds.size();
  t.busIds = busIds;
  t.links.assign(n, std::vector<GpuLink>(n));
  t.activeNvlinks.assign(n, 0);
  t.source = api != nullptr ? "NVML" : why;
  std::vector<void*> handles(n, nullptr);
  for (size_t i = 0; api != nullptr && i < n; ++i) {
    if (api->handleByBusId == nullptr || api->handleByBusId(busIds[i].c_str(), &handles[i]) != nvml::kSuccess)
      handles[i] = nullptr;
    t.activeNvlinks[i] = activeNvlinksOf(*api, handles[i]);
  }
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b) {
      if (busIds[a] == busIds[b]) {
        t.links[a][b] = GpuLink{GpuLinkKind::kSame, true};
      } else if (api != nullptr) {
        t.links[a][b] = linkBetween(*api, handles[a], handles[b]);
      }
    }
  return t;
}

std::string gpuLinksText(const GpuTopology& gpus) {
  const size_t n = gpus.busIds.size();
  if (n < 2) return "";
  std::string text = "GPU links (" + gpus.source + "):\n";
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b) {
      const GpuLink& link = gpus.links[a][b];
      text += "  GPU" + std::to_string(a) + " - GPU" + std::to_string(b) + ": " + gpuLinkKindName(link.kind);
      if (link.kind != GpuLinkKind::kUnknown) text += link.peerAccess ? ", peer access" : ", no peer access (staged)";
      text += "\n";
    }
  return text;
}

}  // namespace topo
}  // namespace coll
