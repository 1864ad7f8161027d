// The cost model's kinds of link: a plan whose inter-host hops go over verbs is costed with the
// verbs link, not the sockets' (describeNetworkLink), COLL_LINK_COSTS overrides each kind, and the
// planner's choice moves where the model says it should.
#include <gtest/gtest.h>

#include "common/error.h"
#include "src/algorithms/algorithms.h"
#include "src/algorithms/cost_model.h"
#include "src/params.h"
#include "src/plan/planner.h"
#include "transport/transport_table.h"

namespace coll {
namespace {

// The table's entry named `name`.
const transport::TransportEntry* entry(const std::string& name) {
  for (const transport::TransportEntry& t : transport::transportTable())
    if (name == t.name) return &t;
  ADD_FAILURE() << "no transport " << name;
  return nullptr;
}

// Two hosts of `perHost` ranks each, their network verbs or sockets, at `costs`.
PlanContext twoHosts(int perHost, bool verbs, const LinkCosts& costs = LinkCosts{}) {
  PlanContext ctx;
  ctx.nranks = 2 * perHost;
  ctx.slotBytes = 128 << 10;
  ctx.fifoDepth = 8;
  algorithms::HostLayout hosts(2);
  for (int r = 0; r < 2 * perHost; ++r) hosts[r / perHost].push_back(r);
  algorithms::describeHostLayout(ctx, hosts);
  describeNetworkLink(ctx, {entry("self"), entry("shm"), entry(verbs ? "verbs" : "net")}, costs);
  return ctx;
}

CollCall allReduce(size_t bytes) {
  CollCall call;
  call.type = CollType::kAllReduce;
  call.count = bytes / 4;
  call.datatype = collFloat32;
  call.elemSize = 4;
  call.op = collSum;
  return call;
}

TEST(PlannerLinks, TheNetworkLinkIsTheRoutesKindSocketsWhenAnyPairUsesThem) {
  const LinkCosts costs;
  PlanContext ctx;
  describeNetworkLink(ctx, {entry("verbs")}, costs);
  EXPECT_EQ(ctx.networkLinkName, "verbs");
  EXPECT_EQ(ctx.networkLink.latencyUs, costs.of("verbs").latencyUs);
  EXPECT_EQ(ctx.networkLink.bytesPerUs, costs.of("verbs").bytesPerUs);
  EXPECT_EQ(ctx.localLink.bytesPerUs, costs.of("shm").bytesPerUs);
  // Some pairs over sockets: a lock-step plan goes at their pace.
  describeNetworkLink(ctx, {entry("net"), entry("verbs")}, costs);
  EXPECT_EQ(ctx.networkLinkName, "socket");
  EXPECT_EQ(ctx.networkLink.bytesPerUs, costs.of("socket").bytesPerUs);
  describeNetworkLink(ctx, {}, costs);
  EXPECT_EQ(ctx.networkLinkName, "socket");
}

// 64 MiB over 2 hosts x 4 ranks. Sockets (8 us, 2 GB/s): the ring sends 2(n-1)/n = 1.75 S over the
// slow link, the two-level all-reduce 2(h-1)/h = 1 S plus 2 S through shared memory: hier
// (about 47 ms against 59). Verbs (3 us, 12 GB/s) is faster than shared memory's 10 GB/s, so
// hier's local phases cost more than they save: the ring (about 10 ms against 19). The link costs
// are the model's and the times its estimates (design value).
TEST(PlannerLinks, LargeAllReduceLeavesTheTwoLevelPlanWhenTheNetworkIsVerbs) {
  const size_t bytes = 64ul << 20;
  const PlanContext sockets = twoHosts(4, false), verbs = twoHosts(4, true);
  EXPECT_EQ(planCall(allReduce(bytes), sockets).algo, Algo::kHier);
  EXPECT_EQ(planCall(allReduce(bytes), verbs).algo, Algo::kRing);
  EXPECT_LT(modelAllReduceUs(Algo::kRing, bytes, verbs), modelAllReduceUs(Algo::kHier, bytes, verbs));
  EXPECT_LT(modelAllReduceUs(Algo::kHier, bytes, sockets), modelAllReduceUs(Algo::kRing, bytes, sockets));
  // The same call costs less over verbs than over sockets, whatever the plan.
  for (Algo algo : {Algo::kRing, Algo::kTree, Algo::kDoubleTree, Algo::kHier})
    EXPECT_LT(modelAllReduceUs(algo, bytes, verbs), modelAllReduceUs(algo, bytes, sockets)) << algoName(algo);
}

// Verbs priced as slowly as sockets (COLL_LINK_COSTS=verbs=8:2) plans exactly as sockets do.
TEST(PlannerLinks, VerbsCostedLikeSocketsPlansLikeSockets) {
  LinkCosts costs;
  parseLinkCosts("verbs=8:2", &costs);
  for (int perHost : {1, 2, 4})
    for (size_t bytes : {8ul, 4096ul, 1ul << 20, 64ul << 20}) {
      const PlanContext sockets = twoHosts(perHost, false, costs), verbs = twoHosts(perHost, true, costs);
      EXPECT_EQ(planCall(allReduce(bytes), verbs).algo, planCall(allReduce(bytes), sockets).algo)
          << bytes << " B, " << perHost << " per host";
    }
}

TEST(PlannerLinks, LinkCostsParseAndRefuseWithTheVariablesName) {
  LinkCosts costs;
  parseLinkCosts("verbs=2.5:25,shm=1:20", &costs);
  EXPECT_EQ(costs.of("verbs").latencyUs, 2.5);
  EXPECT_EQ(costs.of("verbs").bytesPerUs, 25000.0);
  EXPECT_EQ(costs.of("shm").bytesPerUs, 20000.0);
  EXPECT_EQ(costs.of("socket").latencyUs, LinkCosts{}.of("socket").latencyUs);  // not named: unchanged
  for (const char* bad : {"verbs", "verbs=3", "verbs=3:0", "verbs=-1:2", "verbs=3:x", "ib=3:12", "verbs=3:12:1"}) {
    try {
      parseLinkCosts(bad, &costs);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const CollError& e) {
      EXPECT_EQ(e.code(), collInvalidUsage) << bad;
      EXPECT_NE(std::string(e.what()).find("COLL_LINK_COSTS"), std::string::npos) << e.what();
    }
  }
}

// The names, their order and the messages are the transport table's, and the same as when the
// core spelled them: shared memory's, the sockets', verbs', then device memory's.
TEST(PlannerLinks, LinkNamesComeFromTheTransportTableInTheirOrder) {
  LinkCosts costs;
  std::string names;
  for (const LinkCosts::Named& link : costs.links) names += link.name + " ";
  EXPECT_EQ(names, "shm socket verbs p2p staging ");
  EXPECT_EQ(costs.of("shm").latencyUs, 1.5);
  EXPECT_EQ(costs.of("socket").bytesPerUs, 2000.0);
  EXPECT_EQ(costs.of("staging").bytesPerUs, 20000.0);
  const std::pair<const char*, const char*> cases[] = {
      {"ib=3:12",
       "COLL_LINK_COSTS=\"ib=3:12\": unknown link in \"ib=3:12\"; expected shm, socket, verbs, p2p or staging"},
      {"verbs=3",
       "COLL_LINK_COSTS=\"verbs=3\": \"verbs=3\" is not valid: expected LINK=LATENCY_US:GB_PER_S, a latency in "
       "[0, 1e6] and a rate in (0, 1e6], e.g. verbs=3:12"}};
  for (const auto& [bad, message] : cases) {
    try {
      parseLinkCosts(bad, &costs);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const CollError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

// Every setting the ranks compare at init, the transports' among them, by the variable's name.
TEST(PlannerLinks, SharedSettingsNameTheCoresAndEachTransportsVariables) {
  std::string names;
  for (const SharedSetting& setting : sharedSettings(Params{})) names += std::string(setting.name) + " ";
  EXPECT_EQ(names,
            "COLL_ALGO COLL_ONESHOT_BYTES COLL_DIRECT_READ_BYTES COLL_TRANSPORTS COLL_PROTO COLL_LINK_COSTS "
            "COLL_SHM_SLOT_BYTES COLL_SHM_FIFO_DEPTH COLL_NET_FIFO_DEPTH COLL_SOCKET_NSOCKS COLL_NET_ENCRYPT ");
  EXPECT_LE(sharedSettings(Params{}).size(), static_cast<size_t>(kMaxSharedSettings));
}

}  // namespace
}  // namespace coll
