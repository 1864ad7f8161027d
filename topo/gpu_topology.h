// How the GPUs of this machine reach each other, from NVML loaded at run time (libnvidia-ml.so.1
// comes with the driver; a machine without it has no NVIDIA GPU to ask about): per pair of GPUs,
// NVLink or the PCIe path between them (the deepest common ancestor: one board, PCIe switches, a
// host bridge, a NUMA node, or across sockets), and whether one may read the other's memory.
// What that means for a hop's cost is gpuLinkCost's; which device transport a pair takes is
// P2P where peer access works, staging through host memory otherwise (docs/cuda.md).
//
// GPUs are named by their PCI bus ids as CUDA gives them (cudaDeviceGetPCIBusId): NVML numbers
// devices in its own order, and the bus id is what both agree on. The NVML calls go through a
// table of function pointers (NvmlApi), so that the decisions are tested with fakes where no GPU
// and no NVML exist (tests/topo/test_gpu_topology.cc).
#pragma once

#include <string>
#include <vector>

namespace coll {
namespace topo {

enum class GpuLinkKind { kSame, kNvlink, kBoard, kPcieSwitch, kHostBridge, kNumaNode, kSystem, kUnknown };
const char* gpuLinkKindName(GpuLinkKind kind);  // "NVLink", "PCIe switch", ... as colltopo prints

struct GpuLink {
  GpuLinkKind kind = GpuLinkKind::kUnknown;
  bool peerAccess = false;  // NVML's P2P read status is OK
};

struct GpuTopology {
  std::vector<std::string> busIds;          // the GPUs asked about, in the caller's order
  std::vector<std::vector<GpuLink>> links;  // links[a][b]
  std::vector<int> activeNvlinks;           // per GPU: its NVLinks that are up
  std::string source;                       // "NVML", or why the links are unknown
};

// The subset of NVML used, with NVML's own signatures (handles as void*, enums as int).
struct NvmlApi {
  int (*init)() = nullptr;                                                    // nvmlInit_v2
  int (*handleByBusId)(const char* busId, void** device) = nullptr;           // nvmlDeviceGetHandleByPciBusId_v2
  int (*commonAncestor)(void* a, void* b, int* level) = nullptr;              // nvmlDeviceGetTopologyCommonAncestor
  int (*p2pStatus)(void* a, void* b, int capability, int* status) = nullptr;  // nvmlDeviceGetP2PStatus
  int (*nvlinkState)(void* device, unsigned link, int* active) = nullptr;     // nvmlDeviceGetNvLinkState
};

// NVML's values (nvml.h) for the calls above.
namespace nvml {
constexpr int kSuccess = 0;
constexpr int kTopologyInternal = 0, kTopologySingle = 10, kTopologyMultiple = 20, kTopologyHostBridge = 30,
              kTopologyNode = 40, kTopologySystem = 50;
constexpr int kP2pCapsRead = 0, kP2pCapsNvlink = 2;
constexpr int kP2pStatusOk = 0;
constexpr int kFeatureEnabled = 1;
constexpr unsigned kMaxNvlinks = 18;
}  // namespace nvml

// Loads libnvidia-ml.so.1 (once per process) and fills *api; false (and *why) without it.
bool loadNvml(NvmlApi* api, std::string* why);

// The links between the GPUs `busIds` name, as `api` reports them (api null: every link unknown,
// `why` saying why). A GPU NVML does not know leaves its links unknown.
GpuTopology describeGpus(const std::vector<std::string>& busIds, const NvmlApi* api, const std::string& why = "");

// For colltopo: one line per pair of different GPUs ("  GPU0 - GPU1: NVLink, peer access"),
// under a title naming the source; "" for fewer than two GPUs.
std::string gpuLinksText(const GpuTopology& gpus);

}  // namespace topo
}  // namespace coll
