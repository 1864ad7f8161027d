// CPU lists as sysfs and hwloc write them, and the set operations binding relies on.
#include <gtest/gtest.h>

#include "topo/cpu_list.h"
#include "topo/sysfs_read.h"

namespace coll {
namespace topo {
namespace {

TEST(CpuList, ParsesRangesAndSingles) {
  EXPECT_EQ(parseCpuList("0-3,8,10-11"), (CpuList{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parseCpuList("5\n"), (CpuList{5}));
  EXPECT_EQ(parseCpuList(""), CpuList{});
}

TEST(CpuList, SortsAndDropsRepeats) { EXPECT_EQ(parseCpuList("3,1-2,2"), (CpuList{1, 2, 3})); }

TEST(CpuList, SkipsMalformedItems) {
  EXPECT_EQ(parseCpuList("1,x,3-1,4-5y,-2,7"), (CpuList{1, 7}));
  EXPECT_EQ(parseCpuList("0-99999999"), CpuList{});  // beyond CPU_SETSIZE: no affinity call could use it
}

TEST(CpuList, FormatsRanges) {
  EXPECT_EQ(formatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(formatCpuList({4}), "4");
  EXPECT_EQ(formatCpuList({}), "");
  EXPECT_EQ(parseCpuList(formatCpuList({0, 2, 4, 5, 6, 63})), (CpuList{0, 2, 4, 5, 6, 63}));
}

TEST(CpuList, SetOperations) {
  CpuList a{0, 1, 2, 8}, b{2, 3, 8};
  EXPECT_EQ(intersectCpus(a, b), (CpuList{2, 8}));
  EXPECT_EQ(uniteCpus(a, b), (CpuList{0, 1, 2, 3, 8}));
  EXPECT_TRUE(containsCpu(a, 8));
  EXPECT_FALSE(containsCpu(a, 3));
  EXPECT_TRUE(containsAllCpus(a, {1, 8}));
  EXPECT_FALSE(containsAllCpus(a, {1, 3}));
}

TEST(CpuList, CpuSetRoundTrip) {
  CpuList cpus{0, 5, 63, 64};
  EXPECT_EQ(cpuListFromSet(cpuSetFromList(cpus)), cpus);
}

TEST(CpuList, ProcessAffinityIsNotEmpty) { EXPECT_FALSE(processAffinity().empty()); }

TEST(SysfsRead, PciBusIds) {
  EXPECT_TRUE(isPciBusId("0000:3b:00.0"));
  EXPECT_FALSE(isPciBusId("10000:3b:00.0"));  // one digit too many
  EXPECT_FALSE(isPciBusId("virtio2"));
  EXPECT_FALSE(isPciBusId("pci0000:00"));
  EXPECT_FALSE(isPciBusId("0000:3g:00.0"));
}

TEST(SysfsRead, MissingFilesAreUnknownNotErrors) {
  EXPECT_EQ(readFirstLine("/nonexistent/file", "fallback"), "fallback");
  EXPECT_EQ(readNumber("/nonexistent/file", -7), -7);
  EXPECT_TRUE(listDirectory("/nonexistent/dir").empty());
  EXPECT_EQ(pciBusIdBehind("/nonexistent/device"), "");
}

}  // namespace
}  // namespace topo
}  // namespace coll
