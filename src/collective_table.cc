#include "src/collective_table.h"

#include <algorithm>
#include <cstdint>

#include "src/validate_counts.h"

namespace coll {
namespace {

// Buffer multiples of `count` (CollectiveRow::sendShape, recvShape), named short for the rows.
constexpr BufferMultiple one = BufferMultiple::kOne;
constexpr BufferMultiple none = BufferMultiple::kNone;
constexpr BufferMultiple everyRank = BufferMultiple::kEveryRank;
constexpr BufferMultiple everyRankOnRoot = BufferMultiple::kEveryRankOnRoot;
constexpr BufferMultiple oneOnRoot = BufferMultiple::kOneOnRoot;

uintptr_t addressOf(const void* p) { return reinterpret_cast<uintptr_t>(p); }
size_t countBytes(const CollCall& c) { return c.count * c.elemSize; }

// In-place rules (docs/api.md): the send data sits exactly where this rank's part of the receive
// buffer is, or the reverse for reduce-scatter and scatter.
bool sameBuffer(const CollCall& c, int) { return c.sendbuff == c.recvbuff; }
bool sendAtOwnBlock(const CollCall& c, int rank) {
  return addressOf(c.sendbuff) == addressOf(c.recvbuff) + rank * countBytes(c);
}
bool recvAtOwnBlock(const CollCall& c, int rank) {
  return addressOf(c.recvbuff) == addressOf(c.sendbuff) + rank * countBytes(c);
}
bool sendAtRootBlock(const CollCall& c, int) {
  return addressOf(c.sendbuff) == addressOf(c.recvbuff) + c.root * countBytes(c);
}
bool recvAtRootBlock(const CollCall& c, int) {
  return addressOf(c.recvbuff) == addressOf(c.sendbuff) + c.root * countBytes(c);
}

// Variable counts: the same rules at the displacement of this rank's block.
bool sendAtOwnPlace(const CollCall& c, int rank) {
  return addressOf(c.sendbuff) == addressOf(c.recvbuff) + c.counts->rdispls[rank] * c.elemSize;
}
bool recvAtOwnBlockOffset(const CollCall& c, int rank) {
  return addressOf(c.recvbuff) == addressOf(c.sendbuff) + blockOffsetOf(c.counts->recvcounts, rank) * c.elemSize;
}

}  // namespace

// Columns, as CollectiveRow declares them: type, name, C function, COLL_ALGO's spelling, perf program,
// torch op, trace name; hasData, pointToPoint, rooted, reducing, variableCounts; send and receive
// multiples (or checkCounts); the in-place rule, in code and in words (offsets in elements); the
// checks in words; the layout (sources, rootOutputOnly, readsOwnBlock, outputBlockPerSource,
// largestPerRank; send and receive have a peer instead, and no layout), and where cma is taken below
// its threshold.
// clang-format off
const CollectiveRow kCollectiveTable[static_cast<size_t>(CollType::kCount)] = {
    {CollType::kAllReduce, "AllReduce", "collAllReduce", "allreduce", "all_reduce_perf", "all_reduce", "all_reduce",
     true, false, false, true, false, one, one, nullptr, sameBuffer, "sendbuff == recvbuff", "op",
     {Sources::kEveryRank, false, false, false, false}, 0},
    {CollType::kBroadcast, "Broadcast", "collBroadcast", "broadcast", "broadcast_perf", "broadcast", "broadcast",
     true, false, true, false, false, oneOnRoot, one, nullptr, sameBuffer, "sendbuff == recvbuff", "root",
     {Sources::kRoot, false, false, false, false}, kCmaTwoRankWindow},
    {CollType::kReduce, "Reduce", "collReduce", "reduce", "reduce_perf", "reduce", "reduce",
     true, false, true, true, false, one, oneOnRoot, nullptr, sameBuffer, "sendbuff == recvbuff", "op, root",
     {Sources::kEveryRank, true, false, false, false}, 0},
    {CollType::kAllGather, "AllGather", "collAllGather", "allgather", "all_gather_perf", "all_gather_into_tensor",
     "all_gather", true, false, false, false, false, one, everyRank, nullptr, sendAtOwnBlock,
     "sendbuff == recvbuff + rank*sendcount", "",
     {Sources::kEveryRank, false, false, true, true}, kCmaTwoRankModel},
    {CollType::kReduceScatter, "ReduceScatter", "collReduceScatter", "reducescatter", "reduce_scatter_perf",
     "reduce_scatter_tensor", "reduce_scatter", true, false, false, true, false, everyRank, one, nullptr,
     recvAtOwnBlock, "recvbuff == sendbuff + rank*recvcount", "op",
     {Sources::kEveryRank, false, true, false, true}, 0},
    {CollType::kGather, "Gather", "collGather", "gather", "gather_perf", "gather", "gather",
     true, false, true, false, false, one, everyRankOnRoot, nullptr, sendAtRootBlock,
     "sendbuff == recvbuff + root*sendcount on root", "root",
     {Sources::kEveryRank, true, false, true, true}, kCmaTwoRankWindow},
    {CollType::kScatter, "Scatter", "collScatter", "scatter", "scatter_perf", "scatter", "scatter",
     true, false, true, false, false, everyRankOnRoot, one, nullptr, recvAtRootBlock,
     "recvbuff == sendbuff + root*recvcount on root", "root",
     {Sources::kRoot, false, true, false, true}, kCmaTwoRankWindow},
    {CollType::kAllToAll, "AllToAll", "collAllToAll", "alltoall", "alltoall_perf", "all_to_all_single", "all_to_all",
     true, false, false, false, false, everyRank, everyRank, nullptr, nullptr, "", "",
     {Sources::kEveryRank, false, true, true, true}, kCmaTwoRankWindow | kCmaCrowded},
    {CollType::kBarrier, "Barrier", "collBarrier", "barrier", nullptr, "barrier", "barrier",
     false, false, false, false, false, none, none, nullptr, nullptr, "", "nothing",
     {Sources::kNone, false, false, false, false}, 0},
    {CollType::kSend, "Send", "collSend", "send", "sendrecv_perf", "send", "send",
     true, true, false, false, false, one, none, nullptr, nullptr, "", "peer",
     {}, 0},
    {CollType::kRecv, "Recv", "collRecv", "recv", "sendrecv_perf", "recv", "recv",
     true, true, false, false, false, none, one, nullptr, nullptr, "", "peer",
     {}, 0},
    {CollType::kAllGatherV, "AllGatherV", "collAllGatherV", "allgatherv", "allgatherv_perf", "all_gather",
     "all_gather_v", true, false, false, false, true, none, none, checkAllGatherVCounts, sendAtOwnPlace,
     "sendbuff == recvbuff + displs[rank]",
     "recvcounts and displs present; sendcount == recvcounts[rank]; sums and ends fit size_t; receive regions apart",
     {Sources::kEveryRank, false, false, true, false}, 0},
    {CollType::kReduceScatterV, "ReduceScatterV", "collReduceScatterV", "reducescatterv", "reducescatterv_perf",
     "reduce_scatter", "reduce_scatter_v", true, false, false, true, true, none, none, checkReduceScatterVCounts,
     recvAtOwnBlockOffset, "recvbuff == sendbuff + (recvcounts[0] + ... + recvcounts[rank-1])",
     "op; recvcounts present; their sum fits size_t",
     {Sources::kEveryRank, false, true, false, false}, 0},
    {CollType::kAllToAllV, "AllToAllV", "collAllToAllV", "alltoallv", "alltoallv_perf", "all_to_all_single",
     "all_to_all_v", true, false, false, false, true, none, none, checkAllToAllVCounts, nullptr, "",
     "all four arrays present; sendcounts[rank] == recvcounts[rank]; ends fit size_t; receive regions apart",
     {Sources::kEveryRank, false, true, true, false}, 0},
};
// clang-format on

const char* collTraceName(CollType type) { return type < CollType::kCount ? collectiveRow(type).traceName : "unknown"; }

const char* collTypeName(CollType type) { return type < CollType::kCount ? collectiveRow(type).name : "Unknown"; }

size_t largestMultiple(CollType type, int nranks) {
  const CollectiveRow& row = collectiveRow(type);
  if (row.variableCounts) return 1;
  // Rank 0 as the root: every rooted row's largest buffer is the root's.
  return std::max(row.sendMultiple(0, 0, nranks), row.recvMultiple(0, 0, nranks));
}

void bufferElements(const CollCall& c, int rank, int nranks, size_t* sendElems, size_t* recvElems) {
  const CollectiveRow& row = collectiveRow(c.type);
  if (row.variableCounts) {
    *sendElems = c.counts->sendElems;
    *recvElems = c.counts->recvElems;
    return;
  }
  *sendElems = c.count * row.sendMultiple(rank, c.root, nranks);
  *recvElems = c.count * row.recvMultiple(rank, c.root, nranks);
}

}  // namespace coll
