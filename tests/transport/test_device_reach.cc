// Which ranks of a host share device memory directly (transport/device_reach.h), without a GPU:
// islands from every rank's answers (one GPU shared, GPUs with peer access both ways, one-way
// or missing access, access that is not transitive, other hosts), each rank's answers from a fake
// NVML and from the fallback where NVML does not know a GPU, and the device routes the islands
// give: direct inside an island, staged between islands of one host.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "src/plan/device_links.h"
#include "tests/common/expect_coll_error.h"
#include "tests/topo/fake_nvml.h"
#include "tests/transport/described_ranks.h"
#include "transport/device_reach.h"
#include "transport/routes.h"

namespace coll {
namespace transport {
namespace {

// rows[a][b] = 1 where rank a's GPU reaches rank b's: from a relation on GPUs.
std::vector<std::vector<uint8_t>> rowsOf(const std::vector<PeerInfo>& peers, const std::vector<int>& gpuOf,
                                         const std::map<std::pair<int, int>, bool>& reaches) {
  const size_t n = peers.size();
  std::vector<std::vector<uint8_t>> rows(n, std::vector<uint8_t>(n, 0));
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b) {
      if (!onOneHostAndKernel(peers[a], peers[b])) continue;
      auto it = reaches.find({gpuOf[a], gpuOf[b]});
      rows[a][b] = gpuOf[a] == gpuOf[b] || (it != reaches.end() && it->second);
    }
  return rows;
}

TEST(DeviceIslands, OneGpuOrPeerAccessBothWaysJoinsRanks) {
  auto peers = ranksOn({0, 0, 0, 0, 0});
  // GPUs 0 and 1 reach each other; GPU 2 reaches 0 but 0 does not reach 2; GPU 3 reaches none.
  const std::vector<int> gpuOf = {0, 0, 1, 2, 3};
  auto rows = rowsOf(peers, gpuOf, {{{0, 1}, true}, {{1, 0}, true}, {{2, 0}, true}});
  EXPECT_EQ(deviceIslands(peers, rows), (std::vector<uint64_t>{1, 1, 1, 2, 3}));
  EXPECT_EQ(islandsOfHost(0, peers, deviceIslands(peers, rows)), "{0,1,2} {3} {4}");
}

TEST(DeviceIslands, AccessThatIsNotTransitiveSplitsTheGroup) {
  auto peers = ranksOn({0, 0, 0});
  // A-B and B-C reach each other, A-C do not: B joins A's island, C starts its own.
  auto rows = rowsOf(peers, {0, 1, 2}, {{{0, 1}, true}, {{1, 0}, true}, {{1, 2}, true}, {{2, 1}, true}});
  EXPECT_EQ(deviceIslands(peers, rows), (std::vector<uint64_t>{1, 1, 2}));
}

TEST(DeviceIslands, RanksOfOtherHostsNeverShareAnIsland) {
  auto peers = ranksOn({0, 1, 0, 1});
  std::vector<std::vector<uint8_t>> everything(4, std::vector<uint8_t>(4, 1));  // even if a row claims so
  EXPECT_EQ(deviceIslands(peers, everything), (std::vector<uint64_t>{1, 2, 1, 2}));
}

TEST(DeviceIslands, RoutesAreDirectInsideAnIslandAndStagedBetweenIslands) {
  auto peers = ranksOn({0, 0, 0, 0, 1});
  auto rows = rowsOf(peers, {0, 0, 1, 2, 3}, {{{0, 1}, true}, {{1, 0}, true}});
  const std::vector<uint64_t> islands = deviceIslands(peers, rows);
  for (size_t r = 0; r < peers.size(); ++r) peers[r].deviceIsland = islands[r];
  for (int rank = 0; rank < 5; ++rank) {
    Routes routes = chooseRoutes(peers, rank, "", MemoryKind::kDevice);
    for (int peer = 0; peer < 5; ++peer) {
      const bool direct = islands[rank] == islands[peer];
      EXPECT_EQ(routes.toRank[peer]->name, std::string(direct ? "p2p" : "staged")) << rank << " -> " << peer;
    }
    EXPECT_EQ(routes.localGroups, (std::vector<std::vector<int>>{{0, 1, 2}, {3}, {4}}));
  }
  // Host memory does not care about GPUs: shared memory between every rank of a host.
  Routes host = chooseRoutes(peers, 0, "", MemoryKind::kHost);
  EXPECT_EQ(host.toRank[3]->name, std::string("shm"));
  EXPECT_EQ(host.localGroups, (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4}}));
  // Before the islands are known (0 everywhere), a host's ranks are one island, as before.
  auto unknown = ranksOn({0, 0, 0, 0, 1});
  EXPECT_EQ(chooseRoutes(unknown, 0, "", MemoryKind::kDevice).toRank[3]->name, std::string("p2p"));
}

// The fake NVML's GPUs: A and B an NVLink pair with peer access, C on the other socket without;
// D is a GPU NVML does not know.
const std::string A = "0000:18:00.0", B = "0000:2a:00.0", C = "0000:9a:00.0", D = "0000:ff:00.0";

TEST(DeviceReach, NvmlDecidesWhereItKnowsBothGpusTheFallbackElsewhere) {
  // Ranks 0-1 on A, 2 on B, 3 on C, 4 on D (unknown to NVML), 5 could not name its GPU, 6 elsewhere.
  auto peers = ranksOn({0, 0, 0, 0, 0, 0, 1});
  const std::vector<std::string> busIds = {A, A, B, C, D, "", A};
  const topo::NvmlApi api = testing_nvml::fakeNvml();
  std::vector<std::pair<std::string, std::string>> asked;
  auto fallback = [&](const std::string& mine, const std::string& theirs) {
    asked.emplace_back(mine, theirs);
    return theirs == D;  // the runtime says A reaches D
  };
  DeviceReach reach = probeDeviceReach(0, peers, busIds, &api, "", fallback);
  EXPECT_EQ(reach.row, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 0}));
  EXPECT_EQ(asked, (std::vector<std::pair<std::string, std::string>>{{A, D}}));
  EXPECT_EQ(reach.topology.busIds, (std::vector<std::string>{A, B, C, D}));
  EXPECT_EQ(reach.topology.source, "NVML");
  // Without NVML, the fallback decides every pair of different GPUs.
  asked.clear();
  reach = probeDeviceReach(3, peers, busIds, nullptr, "NVML not loaded: test", fallback);
  EXPECT_EQ(reach.row, (std::vector<uint8_t>{0, 0, 0, 1, 1, 1, 0}));
  EXPECT_EQ(asked.size(), 4u);  // A, A, B and D; the rank with no name is taken to reach it
  EXPECT_EQ(reach.topology.source, "NVML not loaded: test");
}

TEST(DeviceReach, TheIslandsGpusArePricedAtTheirSlowestLink) {
  const topo::NvmlApi api = testing_nvml::fakeNvml();
  const topo::GpuTopology t = topo::describeGpus({A, B, C}, &api);
  LinkCosts costs;
  const LinkCost nvlink = slowestGpuLinkAmong(t, {A, B}, costs);
  const LinkCost sockets = slowestGpuLinkAmong(t, {A, B, C}, costs);
  EXPECT_EQ(nvlink.bytesPerUs, gpuLinkCost(topo::GpuLinkKind::kNvlink, costs).bytesPerUs);
  EXPECT_LT(sockets.bytesPerUs, nvlink.bytesPerUs);
  EXPECT_EQ(slowestGpuLinkAmong(t, {A}, costs).bytesPerUs, nvlink.bytesPerUs);
}

TEST(DeviceReach, EveryRankPlansWithTheSlowestPriceAnyRankSent) {
  const std::vector<uint8_t> none = encodeGpuLinkPrice(std::nullopt);
  EXPECT_FALSE(slowestGpuLinkPrice({none, none}).has_value());
  const std::optional<LinkCost> slowest =
      slowestGpuLinkPrice({encodeGpuLinkPrice(LinkCost{2.0, 400.0}), none, encodeGpuLinkPrice(LinkCost{3.0, 900.0})});
  ASSERT_TRUE(slowest.has_value());
  EXPECT_EQ(slowest->latencyUs, 3.0);
  EXPECT_EQ(slowest->bytesPerUs, 400.0);
}

TEST(DeviceReach, APriceAPeerSentWrongIsRefusedNamingTheRank) {
  const std::vector<uint8_t> good = encodeGpuLinkPrice(LinkCost{2.0, 400.0});
  auto refusal = [&](const std::vector<uint8_t>& bad) {
    return colltest::expectCollError(collRemoteError, [&] { slowestGpuLinkPrice({good, good, bad}); });
  };
  std::vector<uint8_t> shorter(good.begin(), good.end() - 1);
  EXPECT_NE(refusal(shorter).find("rank 2 sent a GPU link price of 23 bytes, expected 24"), std::string::npos)
      << refusal(shorter);
  for (const LinkCost bad : {LinkCost{std::nan(""), 400.0}, LinkCost{-1.0, 400.0}, LinkCost{2.0, 0.0},
                             LinkCost{2.0, -5.0}, LinkCost{2.0, HUGE_VAL}, LinkCost{HUGE_VAL, 400.0}}) {
    const std::string message = refusal(encodeGpuLinkPrice(bad));
    EXPECT_NE(message.find("rank 2 sent a GPU link price of"), std::string::npos) << message;
  }
  EXPECT_NO_THROW(slowestGpuLinkPrice({good, good, encodeGpuLinkPrice(std::nullopt)}));
}

}  // namespace
}  // namespace transport
}  // namespace coll
