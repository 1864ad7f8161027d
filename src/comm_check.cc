// COLL_CHECK=1: before each call the ranks exchange what they were asked to do, so that a rank
// that called another collective, count, datatype, op or root is named on every rank
// (collInvalidUsage) instead of corrupting data or hanging; variable-count calls also exchange
// their counts arrays.
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
  mine.callIndex = callCount_ - 1;  // the collectives before this one (run() has counted it)
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
  if (row.variableCounts) checkVariableCounts(call);
}

void Communicator::checkVariableCounts(const CollCall& call) {
  // Each rank shares its recvcounts and, where it has them (all-to-all), its sendcounts: 2n
  // entries, so the exchange itself is the same size everywhere. Every rank then compares the
  // same table in the same order and reaches the same verdict. Displacements are each rank's own
  // layout and may differ.
  const VariableCounts& v = *call.counts;
  const size_t n = static_cast<size_t>(nranks_);
  std::vector<uint64_t> mine(2 * n, 0), all(2 * n * n);
  for (size_t p = 0; p < n; ++p) {
    mine[p] = v.recvcounts[p];
    if (v.sendcounts != nullptr) mine[n + p] = v.sendcounts[p];
  }
  CollCall exchange;
  exchange.type = CollType::kAllGather;
  exchange.sendbuff = mine.data();
  exchange.recvbuff = all.data();
  exchange.count = mine.size() * sizeof(uint64_t);
  exchange.datatype = collUint8;
  exchange.elemSize = 1;
  hostEngine_->run(exchange, nullptr);
  auto recvcount = [&](size_t rank, size_t p) { return static_cast<unsigned long long>(all[rank * 2 * n + p]); };
  auto sendcount = [&](size_t rank, size_t p) { return static_cast<unsigned long long>(all[rank * 2 * n + n + p]); };
  const char* name = collTypeName(call.type);
  for (size_t r = 0; r < n; ++r)
    for (size_t p = 0; p < n; ++p) {
      if (v.sendcounts == nullptr) {
        if (recvcount(r, p) != recvcount(0, p))
          throwError(collInvalidUsage,
                     "%s: COLL_CHECK: rank %zu passed recvcounts[%zu] = %llu but rank 0 passed %llu: every rank "
                     "must pass the same recvcounts",
                     name, r, p, recvcount(r, p), recvcount(0, p));
      } else if (sendcount(r, p) != recvcount(p, r)) {
        throwError(collInvalidUsage,
                   "%s: COLL_CHECK: rank %zu sends rank %zu %llu elements (its sendcounts[%zu]) but rank %zu expects "
                   "%llu (its recvcounts[%zu])",
                   name, r, p, sendcount(r, p), p, p, recvcount(p, r), r);
      }
    }
}

}  // namespace coll
