// COLL_CHECK=1: before each call the ranks exchange what they were asked to do, so that a rank
// that called another collective, count, datatype, op or root is named on every rank
// (collInvalidUsage) instead of corrupting data or hanging.
#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "kernels/cpu/reduce.h"
#include "src/collective_table.h"
#include "src/comm.h"

namespace coll {

void Communicator::checkConsistency(const CollCall& call) {
  // Every rank shares a fixed-size description of its call, so the exchange itself can never
  // mismatch; then each rank compares all descriptions and they all reach the same verdict.
  struct Description {
    uint64_t callIndex, count;
    int32_t type, datatype, op, root;
  } mine{};
  const CollectiveRow& row = collectiveRow(call.type);
  mine.callIndex = callCount_;
  mine.count = row.hasData ? call.count : 0;
  mine.type = static_cast<int32_t>(call.type);
  mine.datatype = row.hasData ? call.datatype : 0;
  mine.op = row.reducing ? call.op : 0;
  mine.root = row.rooted ? call.root : 0;
  std::vector<Description> all(nranks_);
  CollCall exchange;
  exchange.type = CollType::kAllGather;
  exchange.sendbuff = &mine;
  exchange.recvbuff = all.data();
  exchange.count = sizeof(Description);
  exchange.datatype = collUint8;
  exchange.elemSize = 1;
  hostEngine_->run(exchange, nullptr);
  for (int r = 1; r < nranks_; ++r) {
    const Description& d = all[r];
    const Description& first = all[0];
    if (memcmp(&d, &first, sizeof(Description)) == 0) continue;
    auto describe = [](const Description& x) {
      return formatString(
          "%s(count=%llu, datatype=%s, op=%s, root=%d) as call #%llu",
          collTypeName(static_cast<CollType>(std::min<int32_t>(x.type, int32_t(CollType::kCount) - 1))),
          static_cast<unsigned long long>(x.count), kernels::dataTypeName(static_cast<collDataType_t>(x.datatype)),
          kernels::redOpName(static_cast<collRedOp_t>(x.op)), x.root, static_cast<unsigned long long>(x.callIndex));
    };
    throwError(collInvalidUsage, "%s: COLL_CHECK: rank %d called %s but rank 0 called %s", collTypeName(call.type), r,
               describe(d).c_str(), describe(first).c_str());
  }
}

}  // namespace coll
