#include "src/plan/protocol.h"

#include <algorithm>

namespace coll {

size_t deviceCallBytes(const CollCall& call, int nranks) {
  const size_t bytes = call.count * call.elemSize;
  const size_t all = bytes * static_cast<size_t>(nranks);
  switch (call.type) {
    case CollType::kAllGather:
    case CollType::kReduceScatter:
    case CollType::kGather:
    case CollType::kScatter:
    case CollType::kAllToAll:
      return all;
    case CollType::kBarrier:
      return 0;
    default:
      return bytes;
  }
}

device::Protocol chooseProtocol(const CollCall& call, int nranks, bool kernelsConcurrent, ProtoChoice forced) {
  if (!kernelsConcurrent) return device::Protocol::kSimple;
  switch (forced) {
    case ProtoChoice::kLL:
      return device::Protocol::kLL;
    case ProtoChoice::kSimple:
      return device::Protocol::kSimple;
    default:
      return deviceCallBytes(call, nranks) <= kLLMaxBytes ? device::Protocol::kLL : device::Protocol::kSimple;
  }
}

}  // namespace coll
