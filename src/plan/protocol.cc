#include "src/plan/protocol.h"

#include <algorithm>

#include "src/collective_table.h"

namespace coll {

size_t deviceCallBytes(const CollCall& call, int nranks) {
  const CollectiveRow& row = collectiveRow(call.type);
  if (!row.hasData) return 0;
  const size_t bytes = call.count * call.elemSize;
  return row.layout.largestPerRank ? bytes * static_cast<size_t>(nranks) : bytes;
}

device::Protocol chooseProtocolOfBytes(size_t bytes, bool kernelsConcurrent, ProtoChoice forced) {
  if (!kernelsConcurrent) return device::Protocol::kSimple;
  switch (forced) {
    case ProtoChoice::kLL:
      return device::Protocol::kLL;
    case ProtoChoice::kSimple:
      return device::Protocol::kSimple;
    default:
      return bytes <= kLLMaxBytes ? device::Protocol::kLL : device::Protocol::kSimple;
  }
}

device::Protocol chooseProtocol(const CollCall& call, int nranks, bool kernelsConcurrent, ProtoChoice forced) {
  return chooseProtocolOfBytes(deviceCallBytes(call, nranks), kernelsConcurrent, forced);
}

}  // namespace coll
