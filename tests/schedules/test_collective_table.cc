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
    EXPECT_EQ(row.variableCounts, row.sendMultiple == nullptr) << row.name;
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

}  // namespace
}  // namespace coll
