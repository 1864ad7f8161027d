// The collective table (src/collective_table.h): every CollType has its row at its own index, and
// the rows agree with the API's rules where they can be checked without peers.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "src/collective_table.h"

namespace coll {
namespace {

TEST(CollectiveTable, EveryTypeHasItsRowAtItsIndex) {
  std::set<std::string> names, functions;
  for (int t = 0; t < static_cast<int>(CollType::kCount); ++t) {
    const CollectiveRow& row = collectiveRow(static_cast<CollType>(t));
    EXPECT_EQ(static_cast<int>(row.type), t);
    EXPECT_EQ(std::string("coll") + row.name, row.function);
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_TRUE(functions.insert(row.function).second) << row.function;
    // Fixed counts give multiples; variable counts measure their arrays instead.
    EXPECT_EQ(row.variableCounts, row.checkCounts != nullptr) << row.name;
    const bool noShapes = row.sendShape == BufferMultiple::kNone && row.recvShape == BufferMultiple::kNone;
    EXPECT_EQ(row.variableCounts || !row.hasData, noShapes) << row.name;
    EXPECT_EQ(row.inPlace == nullptr, std::strlen(row.inPlaceRule) == 0) << row.name;
  }
}

TEST(CollectiveTable, BufferElementsFollowTheMultiples) {
  CollCall call;
  call.type = CollType::kGather;
  call.count = 5;
  call.root = 2;
  size_t send = 0, recv = 0;
  bufferElements(call, 2, 4, &send, &recv);
  EXPECT_EQ(send, 5u);
  EXPECT_EQ(recv, 20u);
  bufferElements(call, 1, 4, &send, &recv);
  EXPECT_EQ(recv, 0u);
}

TEST(CollectiveTable, LayoutFollowsTheMultiples) {
  // The layout is stored so that a call reads it without calling through the row; for fixed counts
  // it must say what the multiples say, at every root and rank.
  constexpr int n = 4;
  for (int t = 0; t < static_cast<int>(CollType::kCount); ++t) {
    const CollType type = static_cast<CollType>(t);
    const CollectiveRow& row = collectiveRow(type);
    const DataLayout& layout = row.layout;
    if (!row.hasData || row.pointToPoint) {
      EXPECT_EQ(layout.sources, Sources::kNone) << row.name;
      EXPECT_FALSE(layout.largestPerRank) << row.name;
      continue;
    }
    EXPECT_NE(layout.sources, Sources::kNone) << row.name;
    if (row.variableCounts) {
      EXPECT_FALSE(layout.largestPerRank) << row.name;
      continue;
    }
    EXPECT_EQ(layout.largestPerRank, largestMultiple(type, n) == n) << row.name;
    for (int root = 0; root < n; ++root) {
      EXPECT_EQ(layout.readsOwnBlock, row.sendMultiple(root, root, n) == n) << row.name;
      EXPECT_EQ(layout.outputBlockPerSource, row.recvMultiple(root, root, n) == n) << row.name;
      for (int rank = 0; rank < n; ++rank) {
        if (rank == root) continue;
        EXPECT_EQ(layout.sources == Sources::kRoot, row.sendMultiple(rank, root, n) == 0) << row.name;
        EXPECT_EQ(layout.rootOutputOnly, row.recvMultiple(rank, root, n) == 0) << row.name;
        EXPECT_EQ(hasOutput(row, rank, root), row.recvMultiple(rank, root, n) > 0) << row.name;
      }
    }
  }
}

TEST(CollectiveTable, WhoReadsWhom) {
  const CollectiveRow& broadcast = collectiveRow(CollType::kBroadcast);
  EXPECT_TRUE(readsFrom(broadcast, 1, 2, 2));
  EXPECT_FALSE(readsFrom(broadcast, 1, 2, 3));
  const CollectiveRow& gather = collectiveRow(CollType::kGather);
  EXPECT_TRUE(readsFrom(gather, 2, 2, 3));
  EXPECT_FALSE(readsFrom(gather, 1, 2, 3));
  EXPECT_TRUE(readsFrom(collectiveRow(CollType::kBarrier), 0, 0, 3));
  EXPECT_TRUE(readsFrom(collectiveRow(CollType::kAllToAll), 0, 0, 3));
  // The shape the direct paths split into a reduce and a share: the all-reduce's alone.
  for (int t = 0; t < static_cast<int>(CollType::kCount); ++t)
    EXPECT_EQ(reducesIntoEveryRank(collectiveRow(static_cast<CollType>(t))), t == static_cast<int>(CollType::kAllReduce))
        << collTypeName(static_cast<CollType>(t));
}

}  // namespace
}  // namespace coll
