// Where a verbs device sits and how near it is to a rank (transport/verbs/verbs_locality.h), read
// from a made-up sysfs tree laid out as Linux lays it out.
#include <gtest/gtest.h>

#include "fake_sysfs.h"
#include "topo/cpu_list.h"
#include "transport/verbs/verbs_locality.h"

namespace coll {
namespace transport {
namespace {

using topo::parseCpuList;

TEST(VerbsLocality, ReadsPciFunctionNodeAndLocalCpus) {
  verbstest::FakeSysfs sysfs;
  sysfs.addDevice("mlx5_0", "0000:80:01.0", "0000:81:00.0", 1, "8-15");
  const VerbsDevicePlace place = verbsDevicePlace(sysfs.ibdevPath("mlx5_0"));
  EXPECT_EQ(place.pciBusId, "0000:81:00.0");
  EXPECT_EQ(place.numaNode, 1);
  EXPECT_EQ(place.localCpus, parseCpuList("8-15"));
  EXPECT_EQ(describeVerbsDevicePlace(place), "PCI 0000:81:00.0, NUMA node 1, CPUs 8-15");
}

TEST(VerbsLocality, WithoutLocalCpusTakesItsNodesCpus) {
  verbstest::FakeSysfs sysfs;
  sysfs.addNode(0, "0-3");
  sysfs.addNode(1, "4-7");
  sysfs.addDevice("mlx5_1", "0000:00:02.0", "0000:03:00.0", 1, "");
  EXPECT_EQ(verbsDevicePlace(sysfs.ibdevPath("mlx5_1")).localCpus, parseCpuList("4-7"));
}

TEST(VerbsLocality, WhatCannotBeReadStaysUnknown) {
  verbstest::FakeSysfs sysfs;
  sysfs.addDevice("mlx5_2", "0000:00:02.0", "0000:04:00.0", -1, "");  // numa_node -1: no NUMA information
  const VerbsDevicePlace known = verbsDevicePlace(sysfs.ibdevPath("mlx5_2"));
  EXPECT_EQ(known.pciBusId, "0000:04:00.0");
  EXPECT_EQ(known.numaNode, -1);
  EXPECT_TRUE(known.localCpus.empty());
  const VerbsDevicePlace missing = verbsDevicePlace(sysfs.ibdevPath("absent"));
  EXPECT_EQ(missing.pciBusId, "");
  EXPECT_EQ(missing.numaNode, -1);
  EXPECT_EQ(describeVerbsDevicePlace(missing), "place unknown");
  EXPECT_EQ(verbsNearness(missing, parseCpuList("0")), VerbsNearness::kUnknown);
}

TEST(VerbsLocality, NearnessOrdersNearPartlyUnknownFar) {
  VerbsDevicePlace place;
  place.localCpus = parseCpuList("0-3");
  EXPECT_EQ(verbsNearness(place, parseCpuList("1-2")), VerbsNearness::kNear);
  EXPECT_EQ(verbsNearness(place, parseCpuList("2-5")), VerbsNearness::kPartly);  // bound across nodes
  EXPECT_EQ(verbsNearness(place, parseCpuList("4-7")), VerbsNearness::kFar);
  EXPECT_EQ(verbsNearness(place, {}), VerbsNearness::kUnknown);  // binding unknown
  EXPECT_LT(VerbsNearness::kNear, VerbsNearness::kPartly);
  EXPECT_LT(VerbsNearness::kPartly, VerbsNearness::kUnknown);
  EXPECT_LT(VerbsNearness::kUnknown, VerbsNearness::kFar);
}

}  // namespace
}  // namespace transport
}  // namespace coll
