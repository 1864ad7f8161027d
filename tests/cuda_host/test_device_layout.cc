// The planner's device rows for two levels (src/plan/device_program.h, DeviceLayout): ranks whose
// GPUs reach each other through P2P form a group, hops between groups are device memory staged
// through pinned host memory, and the cost model prices them with their own rows (COLL_LINK_COSTS
// p2p and staging; stagedLink adds staging to the network's link). A table of layouts, networks,
// collectives and sizes with the plan each must get; the host-ordered ring; staged calls take
// Simple; the flat device plans are unchanged where no layout is given.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "src/algorithms/cost_model.h"
#include "src/params.h"
#include "src/plan/device_program.h"
#include "src/plan/protocol.h"

namespace coll {
namespace {

enum class Net { kNone, kSocket, kVerbs };

// `hosts` hosts of `perHost` ranks each; ranks are dealt round-robin when `interleaved`
// (rank r on host r % hosts), else host by host.
DeviceLayout layoutOf(int hosts, int perHost, Net net, bool interleaved = false) {
  DeviceLayout layout;
  if (net == Net::kNone) return layout;
  const LinkCosts costs;
  layout.staged = true;
  layout.hosts.assign(hosts, {});
  for (int r = 0; r < hosts * perHost; ++r) layout.hosts[interleaved ? r % hosts : r / perHost].push_back(r);
  layout.localLink = costs.of("p2p");
  layout.networkLink = stagedLink(net == Net::kVerbs ? costs.of("verbs") : costs.of("socket"), costs.of("staging"));
  layout.networkLinkName = net == Net::kVerbs ? "verbs" : "socket";
  return layout;
}

CollCall callOf(CollType type, size_t bytes) {
  CollCall c;
  c.type = type;
  c.datatype = collFloat32;
  c.elemSize = 4;
  c.count = bytes / 4;
  c.op = collSum;
  return c;
}

DeviceCallContext contextOf(int nranks, const DeviceLayout& layout, int rank = 0) {
  DeviceCallContext context;
  context.rank = rank;
  context.nranks = nranks;
  context.layout = layout;
  context.staged = layout.staged;
  return context;
}

std::string planned(const CollCall& call, const DeviceCallContext& context) {
  device::ChannelGeometry geometry;
  return planDeviceSchedule(call, context, &geometry).algorithm;
}

struct Row {
  const char* what;
  int hosts;
  int perHost;
  Net net;
  CollType type;
  size_t bytes;
  const char* algorithm;
};

// What the model gives, and why (docs/cuda.md, "Two levels"): with the network the slow link,
// large all-reduces across hosts take the two-level plan (each byte crosses the network once
// per direction instead of 2(n-1)/n times); one GPU per host has no inner level, so the ring;
// small ones go by latency; all-gather and reduce-scatter keep the host-ordered ring.
const Row kRows[] = {
    {"2 hosts x 4 GPUs, sockets, 64 MiB all-reduce", 2, 4, Net::kSocket, CollType::kAllReduce, 64 << 20, "hier"},
    {"2 hosts x 4 GPUs, verbs, 64 MiB all-reduce", 2, 4, Net::kVerbs, CollType::kAllReduce, 64 << 20, "hier"},
    {"4 hosts x 2 GPUs, sockets, 64 MiB all-reduce", 4, 2, Net::kSocket, CollType::kAllReduce, 64 << 20, "hier"},
    {"4 hosts x 1 GPU, sockets, 64 MiB all-reduce", 4, 1, Net::kSocket, CollType::kAllReduce, 64 << 20, "ring"},
    {"2 hosts x 4 GPUs, sockets, 8 B all-reduce", 2, 4, Net::kSocket, CollType::kAllReduce, 8, "tree"},
    {"2 hosts x 4 GPUs, sockets, 64 MiB all-gather", 2, 4, Net::kSocket, CollType::kAllGather, 64 << 20, "ring"},
    {"2 hosts x 4 GPUs, sockets, 64 MiB reduce-scatter", 2, 4, Net::kSocket, CollType::kReduceScatter, 64 << 20,
     "ring"},
    {"one host of 8 GPUs (P2P), 64 MiB all-reduce", 1, 8, Net::kNone, CollType::kAllReduce, 64 << 20, "ring"},
};

TEST(DeviceLayoutPlans, EachRowGetsItsPlan) {
  for (const Row& row : kRows) {
    const int n = row.hosts * row.perHost;
    const DeviceLayout layout = layoutOf(row.hosts, row.perHost, row.net);
    EXPECT_EQ(planned(callOf(row.type, row.bytes), contextOf(n, layout)), row.algorithm) << row.what;
  }
}

// The model behind the rows: across hosts over sockets the two-level all-reduce is cheaper than
// the ring at 64 MiB, and staging makes a network hop dearer than the network alone.
TEST(DeviceLayoutPlans, StagingAddsToTheNetworksCost) {
  const LinkCosts costs;
  const LinkCost staged = stagedLink(costs.of("socket"), costs.of("staging"));
  EXPECT_DOUBLE_EQ(staged.latencyUs, costs.of("socket").latencyUs + costs.of("staging").latencyUs);
  EXPECT_DOUBLE_EQ(staged.bytesPerUs, std::min(costs.of("socket").bytesPerUs, costs.of("staging").bytesPerUs));
  const LinkCost slowStaging{1.0, 500.0};
  EXPECT_DOUBLE_EQ(stagedLink(costs.of("verbs"), slowStaging).bytesPerUs, 500.0) << "the slower rate paces the hop";
}

// Ranks dealt round-robin over two hosts: the ring visits each host's ranks together, so only
// two of its edges cross the network.
TEST(DeviceLayoutPlans, TheRingGoesHostByHost) {
  const DeviceLayout layout = layoutOf(2, 4, Net::kSocket, /*interleaved=*/true);
  Algo overrides[static_cast<int>(CollType::kCount)];
  for (Algo& a : overrides) a = Algo::kAuto;
  overrides[static_cast<int>(CollType::kAllReduce)] = Algo::kRing;
  DeviceCallContext context = contextOf(8, layout);
  context.overrides = overrides;
  device::ChannelGeometry geometry;
  const Schedule s = planDeviceSchedule(callOf(CollType::kAllReduce, 1 << 20), context, &geometry);
  ASSERT_FALSE(s.steps.empty());
  // Host 0 holds ranks 0, 2, 4, 6: rank 0 sends only to 2 and receives only from host 1's last
  // rank, 7.
  std::set<int> sendsTo, receivesFrom;
  for (const Step& step : s.steps) {
    for (int i = 0; i < step.nsend; ++i) sendsTo.insert(step.sendPeers[i]);
    for (int i = 0; i < step.nrecv; ++i) receivesFrom.insert(step.recvPeers[i]);
  }
  EXPECT_EQ(sendsTo, std::set<int>{2});
  EXPECT_EQ(receivesFrom, std::set<int>{7});
}

// Staged calls take Simple whatever their size (the proxies move Simple slots): COLL_PROTO=LL
// too, as in serialized mode.
TEST(DeviceLayoutPlans, StagedCallsTakeSimple) {
  const DeviceLayout layout = layoutOf(2, 1, Net::kSocket);
  DeviceCallContext context = contextOf(2, layout);
  device::ChannelGeometry geometry;
  planDeviceSchedule(callOf(CollType::kAllReduce, 8), context, &geometry);
  EXPECT_EQ(geometry.protocol, device::Protocol::kSimple);
  context.forced = ProtoChoice::kLL;
  planDeviceSchedule(callOf(CollType::kAllReduce, 8), context, &geometry);
  EXPECT_EQ(geometry.protocol, device::Protocol::kSimple);
  context = contextOf(2, DeviceLayout{});
  planDeviceSchedule(callOf(CollType::kAllReduce, 8), context, &geometry);
  EXPECT_EQ(geometry.protocol, device::Protocol::kLL) << "one host keeps LL for small calls";
}

TEST(DeviceLayoutPlans, CollLinkCostsSetsTheDeviceRows) {
  LinkCosts costs;
  parseLinkCosts("p2p=1:50,staging=4:25", &costs);
  EXPECT_DOUBLE_EQ(costs.of("p2p").latencyUs, 1.0);
  EXPECT_DOUBLE_EQ(costs.of("p2p").bytesPerUs, 50000.0);
  EXPECT_DOUBLE_EQ(costs.of("staging").latencyUs, 4.0);
  EXPECT_DOUBLE_EQ(costs.of("staging").bytesPerUs, 25000.0);
  try {
    parseLinkCosts("gpu=1:2", &costs);
    ADD_FAILURE() << "an unknown link was accepted";
  } catch (const CollError& e) {
    EXPECT_NE(std::string(e.what()).find("p2p or staging"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace coll
