// Which GPU a P2P rank runs on, as every process of the host names it alike. A CUDA ordinal is
// not such a name: CUDA_VISIBLE_DEVICES hides and reorders GPUs per process, so with one GPU per
// process every rank's GPU is ordinal 0, and one GPU can be ordinal 0 in one process and 3 in
// another. The PCI bus id (cudaDeviceGetPCIBusId) is the same in every process; the ordinal is
// used only where a bus id is unknown. No CUDA header: the host tests use it.
#pragma once

#include <cctype>
#include <string>

namespace coll {
namespace transport {

// The key for "one GPU": the bus id in lower case, or the ordinal where the bus id is empty.
inline std::string gpuKey(const std::string& busId, int ordinal) {
  if (busId.empty()) return "ordinal " + std::to_string(ordinal);
  std::string key;
  for (char c : busId) key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return key;
}

// One GPU: the same key (a known bus id never equals an unknown one's ordinal key).
inline bool sameGpu(const std::string& busIdA, int ordinalA, const std::string& busIdB, int ordinalB) {
  return gpuKey(busIdA, ordinalA) == gpuKey(busIdB, ordinalB);
}

}  // namespace transport
}  // namespace coll
