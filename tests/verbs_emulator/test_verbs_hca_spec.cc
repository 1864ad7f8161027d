// COLL_IB_HCA's parser and matcher (transport/verbs/verbs_hca_spec.h): NCCL_IB_HCA's syntax.
#include <gtest/gtest.h>

#include "common/error.h"
#include "transport/verbs/verbs_hca_spec.h"

namespace coll {
namespace transport {
namespace {

TEST(VerbsHcaSpec, EmptySelectsEverything) {
  const VerbsHcaSpec spec = parseVerbsHcaSpec("");
  EXPECT_TRUE(spec.items.empty());
  EXPECT_TRUE(verbsHcaSelects(spec, "mlx5_0", 1));
  EXPECT_TRUE(verbsHcaSelects(spec, "anything", 2));
}

TEST(VerbsHcaSpec, NamesArePrefixesAndPortsOptional) {
  const VerbsHcaSpec spec = parseVerbsHcaSpec("mlx5_0:1,mlx5_1");
  ASSERT_EQ(spec.items.size(), 2u);
  EXPECT_FALSE(spec.exclude);
  EXPECT_FALSE(spec.exact);
  EXPECT_EQ(spec.items[0].device, "mlx5_0");
  EXPECT_EQ(spec.items[0].port, 1);
  EXPECT_EQ(spec.items[1].port, 0);
  EXPECT_TRUE(verbsHcaSelects(spec, "mlx5_0", 1));
  EXPECT_FALSE(verbsHcaSelects(spec, "mlx5_0", 2));
  EXPECT_TRUE(verbsHcaSelects(spec, "mlx5_1", 2));
  EXPECT_TRUE(verbsHcaSelects(spec, "mlx5_10", 1));  // a prefix, as NCCL matches
  EXPECT_FALSE(verbsHcaSelects(spec, "mlx5_2", 1));
  EXPECT_TRUE(verbsHcaSelects(parseVerbsHcaSpec("mlx5"), "mlx5_3", 1));
}

TEST(VerbsHcaSpec, EqualsMatchesWholeNames) {
  const VerbsHcaSpec spec = parseVerbsHcaSpec("=mlx5_1");
  EXPECT_TRUE(spec.exact);
  EXPECT_TRUE(verbsHcaSelects(spec, "mlx5_1", 1));
  EXPECT_FALSE(verbsHcaSelects(spec, "mlx5_10", 1));
}

TEST(VerbsHcaSpec, CaretExcludes) {
  const VerbsHcaSpec spec = parseVerbsHcaSpec("^mlx5_1");
  EXPECT_TRUE(spec.exclude);
  EXPECT_TRUE(verbsHcaSelects(spec, "mlx5_0", 1));
  EXPECT_FALSE(verbsHcaSelects(spec, "mlx5_1", 1));
  EXPECT_FALSE(verbsHcaSelects(spec, "mlx5_10", 1));
  const VerbsHcaSpec exact = parseVerbsHcaSpec("^=mlx5_1");
  EXPECT_TRUE(exact.exclude && exact.exact);
  EXPECT_FALSE(verbsHcaSelects(exact, "mlx5_1", 1));
  EXPECT_TRUE(verbsHcaSelects(exact, "mlx5_10", 1));
  // An excluded port leaves the device's other ports.
  const VerbsHcaSpec port = parseVerbsHcaSpec("^mlx5_0:1");
  EXPECT_FALSE(verbsHcaSelects(port, "mlx5_0", 1));
  EXPECT_TRUE(verbsHcaSelects(port, "mlx5_0", 2));
}

TEST(VerbsHcaSpec, MalformedIsInvalidUsageNamingTheVariable) {
  for (const char* bad : {"^", "=", "^=", "mlx5_0,", ",mlx5_0", "mlx5_0:", "mlx5_0:x", "mlx5_0:0", "mlx5_0:256",
                          ":1", "mlx5_0:1x"}) {
    try {
      parseVerbsHcaSpec(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const CollError& e) {
      EXPECT_EQ(e.code(), collInvalidUsage) << bad;
      EXPECT_NE(std::string(e.what()).find("COLL_IB_HCA"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace transport
}  // namespace coll
