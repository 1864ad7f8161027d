// A fake NVML for tests where no GPU and no NVML exist: four GPUs in two NVLink pairs on two
// sockets (0000:18:00.0 with 0000:2a:00.0, 0000:9a:00.0 with 0000:ab:00.0), the pairs joined by
// PCIe through the host bridge of each socket, peer access only inside a pair; any other bus id
// is a GPU NVML does not know.
#pragma once

#include <map>
#include <string>

#include "topo/gpu_topology.h"

namespace coll {
namespace testing_nvml {

// GPU i's handle is the address of kHandles[i]; GPUs 0-1 and 2-3 are NVLink pairs.
inline int kHandles[4];
inline int indexOf(void* d) { return static_cast<int>(static_cast<int*>(d) - kHandles); }
inline bool samePair(void* a, void* b) { return indexOf(a) / 2 == indexOf(b) / 2; }

inline int fakeInit() { return topo::nvml::kSuccess; }
inline int fakeHandle(const char* busId, void** device) {
  static const std::map<std::string, int> known = {
      {"0000:18:00.0", 0}, {"0000:2a:00.0", 1}, {"0000:9a:00.0", 2}, {"0000:ab:00.0", 3}};
  auto it = known.find(busId);
  if (it == known.end()) return 13;  // NVML_ERROR_NOT_FOUND
  *device = &kHandles[it->second];
  return topo::nvml::kSuccess;
}
inline int fakeAncestor(void* a, void* b, int* level) {
  *level = samePair(a, b) ? topo::nvml::kTopologyHostBridge : topo::nvml::kTopologySystem;
  return topo::nvml::kSuccess;
}
inline int fakeP2p(void* a, void* b, int capability, int* status) {
  const bool ok =
      samePair(a, b) && (capability == topo::nvml::kP2pCapsRead || capability == topo::nvml::kP2pCapsNvlink);
  *status = ok ? topo::nvml::kP2pStatusOk : 1;
  return topo::nvml::kSuccess;
}
inline int fakeNvlink(void*, unsigned link, int* active) {
  if (link >= 4) return 3;  // NVML_ERROR_NOT_SUPPORTED: links the GPU lacks
  *active = link < 2 ? topo::nvml::kFeatureEnabled : 0;
  return topo::nvml::kSuccess;
}

inline topo::NvmlApi fakeNvml() {
  topo::NvmlApi api;
  api.init = fakeInit;
  api.handleByBusId = fakeHandle;
  api.commonAncestor = fakeAncestor;
  api.p2pStatus = fakeP2p;
  api.nvlinkState = fakeNvlink;
  return api;
}

}  // namespace testing_nvml
}  // namespace coll
