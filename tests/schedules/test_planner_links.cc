// The cost model's kinds of link: a plan whose inter-host hops go over verbs is costed with the
// verbs link, not the sockets' (describeNetworkLink), COLL_LINK_COSTS overrides each kind, and the
// planner's choice moves where the model says it should.
#include <gtest/gtest.h>

#include "common/error.h"
#include "src/algorithms/algorithms.h"
#include "src/algorithms/cost_model.h"
#include "src/params.h"
#include "src/plan/planner.h"

namespace coll {
namespace {

// Two hosts of `perHost` ranks each, their network verbs or sockets, at `costs`.
PlanContext twoHosts(int perHost, bool verbs, const LinkCosts& costs = LinkCosts{}) {
  PlanContext ctx;
  ctx.nranks = 2 * perHost;
  ctx.slotBytes = 128 << 10;
  ctx.fifoDepth = 8;
  algorithms::HostLayout hosts(2);
  for (int r = 0; r < 2 * perHost; ++r) hosts[r / perHost].push_back(r);
  algorithms::describeHostLayout(ctx, hosts);
  describeNetworkLink(ctx, /*socketRoutes=*/!verbs, /*verbsRoutes=*/verbs, costs);
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
  describeNetworkLink(ctx, false, true, costs);
  EXPECT_EQ(ctx.networkLinkKind, NetworkLinkKind::kVerbs);
  EXPECT_EQ(ctx.networkLink.latencyUs, costs.verbs.latencyUs);
  EXPECT_EQ(ctx.networkLink.bytesPerUs, costs.verbs.bytesPerUs);
  // Some pairs over sockets: a lock-step plan goes at their pace.
  describeNetworkLink(ctx, true, true, costs);
  EXPECT_EQ(ctx.networkLinkKind, NetworkLinkKind::kSocket);
  EXPECT_EQ(ctx.networkLink.bytesPerUs, costs.socket.bytesPerUs);
  describeNetworkLink(ctx, false, false, costs);
  EXPECT_EQ(ctx.networkLinkKind, NetworkLinkKind::kSocket);
  EXPECT_STREQ(networkLinkKindName(NetworkLinkKind::kVerbs), "verbs");
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
  EXPECT_EQ(costs.verbs.latencyUs, 2.5);
  EXPECT_EQ(costs.verbs.bytesPerUs, 25000.0);
  EXPECT_EQ(costs.sharedMemory.bytesPerUs, 20000.0);
  EXPECT_EQ(costs.socket.latencyUs, LinkCosts{}.socket.latencyUs);  // not named: unchanged
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

}  // namespace
}  // namespace coll
