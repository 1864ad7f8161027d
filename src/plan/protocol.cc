#include "src/plan/protocol.h"

#include <algorithm>
#include <cstdint>

#include "src/collective_table.h"

namespace coll {

size_t deviceCallBytes(const CollCall& call, int nranks) {
  const CollectiveRow& row = collectiveRow(call.type);
  if (!row.hasData) return 0;
  // Every rank must pick the same protocol. Variable counts: the count is what the ranks agree on
  // (the sum of an all-gather's or reduce-scatter's blocks); an all-to-all's ranks agree on none,
  // and its pairs move what their arrays say, so it takes the protocol of large transfers.
  if (row.variableCounts) return call.count > 0 ? call.count * call.elemSize : SIZE_MAX;
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
