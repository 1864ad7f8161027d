// The GPU topology from NVML (topo/gpu_topology.h) and what the cost model makes of it
// (src/plan/device_links.h), with a fake NVML: four GPUs in two NVLink pairs on two sockets, the
// pairs joined by PCIe through the host bridge of each socket, peer access only inside a pair; a
// GPU NVML does not know; no NVML at all. NVML itself is absent here and loadNvml says so.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "src/plan/device_links.h"
#include "tests/topo/fake_nvml.h"
#include "topo/gpu_topology.h"

namespace coll {
namespace {

using testing_nvml::fakeNvml;
using topo::GpuLinkKind;

TEST(GpuTopology, NvlinkPairsPcieBetweenThemAndPeerAccessOnlyWhereNvmlSaysSo) {
  const topo::NvmlApi api = fakeNvml();
  const topo::GpuTopology t =
      topo::describeGpus({"0000:18:00.0", "0000:2a:00.0", "0000:9a:00.0", "0000:ab:00.0"}, &api);
  EXPECT_EQ(t.source, "NVML");
  EXPECT_EQ(t.links[0][1].kind, GpuLinkKind::kNvlink);
  EXPECT_EQ(t.links[2][3].kind, GpuLinkKind::kNvlink);
  EXPECT_EQ(t.links[0][2].kind, GpuLinkKind::kSystem);
  EXPECT_EQ(t.links[1][1].kind, GpuLinkKind::kSame);
  EXPECT_TRUE(t.links[0][1].peerAccess);
  EXPECT_FALSE(t.links[1][3].peerAccess);
  EXPECT_EQ(t.activeNvlinks[2], 2);
  EXPECT_FALSE(needsStaging(t, 0, 1));
  EXPECT_TRUE(needsStaging(t, 0, 3)) << "no peer access: device memory goes through host memory";
  EXPECT_STREQ(topo::gpuLinkKindName(t.links[0][2].kind), "across sockets");
}

// What colltopo prints of them: every pair once, its kind and whether it is staged.
TEST(GpuTopology, LinksTextNamesEveryPairOnce) {
  const topo::NvmlApi api = fakeNvml();
  const std::string text =
      topo::gpuLinksText(topo::describeGpus({"0000:18:00.0", "0000:2a:00.0", "0000:9a:00.0"}, &api));
  EXPECT_EQ(text,
            "GPU links (NVML):\n"
            "  GPU0 - GPU1: NVLink, peer access\n"
            "  GPU0 - GPU2: across sockets, no peer access (staged)\n"
            "  GPU1 - GPU2: across sockets, no peer access (staged)\n");
  EXPECT_EQ(topo::gpuLinksText(topo::describeGpus({"0000:18:00.0", "0000:2a:00.0"}, nullptr, "NVML not loaded")),
            "GPU links (NVML not loaded):\n  GPU0 - GPU1: unknown\n");
  EXPECT_EQ(topo::gpuLinksText(topo::describeGpus({"0000:18:00.0"}, &api)), "");
}

TEST(GpuTopology, UnknownGpusAndNoNvmlLeaveLinksUnknown) {
  const topo::NvmlApi api = fakeNvml();
  topo::GpuTopology t = topo::describeGpus({"0000:18:00.0", "0000:ff:00.0"}, &api);
  EXPECT_EQ(t.links[0][1].kind, GpuLinkKind::kUnknown);
  EXPECT_FALSE(t.links[0][1].peerAccess);
  t = topo::describeGpus({"0000:18:00.0", "0000:2a:00.0"}, nullptr, "NVML not loaded: no such file");
  EXPECT_EQ(t.source, "NVML not loaded: no such file");
  EXPECT_EQ(t.links[0][1].kind, GpuLinkKind::kUnknown);
  EXPECT_EQ(t.links[0][0].kind, GpuLinkKind::kSame);
}

// The cost rows: NVLink is the p2p row; PCIe runs at the staging row's rate; across sockets at
// half of it; a host's local link is its slowest pair's.
TEST(GpuTopology, TheCostModelPricesEachKindOfLink) {
  const LinkCosts costs;
  EXPECT_DOUBLE_EQ(gpuLinkCost(GpuLinkKind::kNvlink, costs).bytesPerUs, costs.of("p2p").bytesPerUs);
  EXPECT_DOUBLE_EQ(gpuLinkCost(GpuLinkKind::kPcieSwitch, costs).bytesPerUs, costs.of("staging").bytesPerUs);
  EXPECT_DOUBLE_EQ(gpuLinkCost(GpuLinkKind::kSystem, costs).bytesPerUs, costs.of("staging").bytesPerUs / 2);
  const topo::NvmlApi api = fakeNvml();
  const topo::GpuTopology pair = topo::describeGpus({"0000:18:00.0", "0000:2a:00.0"}, &api);
  EXPECT_DOUBLE_EQ(slowestGpuLink(pair, costs).bytesPerUs, costs.of("p2p").bytesPerUs);
  const topo::GpuTopology four =
      topo::describeGpus({"0000:18:00.0", "0000:2a:00.0", "0000:9a:00.0", "0000:ab:00.0"}, &api);
  EXPECT_DOUBLE_EQ(slowestGpuLink(four, costs).bytesPerUs, costs.of("staging").bytesPerUs / 2);
}

// This machine has no NVIDIA driver: loading NVML fails and says why, and nothing else breaks.
TEST(GpuTopology, LoadingNvmlSaysWhyItIsAbsent) {
  topo::NvmlApi api;
  std::string why;
  if (topo::loadNvml(&api, &why)) GTEST_SKIP() << "NVML is present here";
  EXPECT_NE(why.find("NVML"), std::string::npos) << why;
}

}  // namespace
}  // namespace coll
