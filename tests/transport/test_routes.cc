// Routes from the transport table (transport/routes.h), on described ranks without any transport
// set up: self to itself, shared memory within a host, sockets between hosts, COLL_TRANSPORTS
// honoured, the same answer from both ends of every pair, the groups of ranks that share memory,
// and a clear refusal when nothing connects a pair.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "tests/transport/described_ranks.h"
#include "transport/routes.h"

namespace coll {
namespace transport {
namespace {

std::string routeName(const Routes& routes, int peer) { return routes.toRank[peer]->name; }

TEST(Routes, SelfSharedMemoryAndSockets) {
  auto peers = ranksOn({0, 1, 0, 1, 1});
  for (int rank = 0; rank < 5; ++rank) {
    Routes routes = chooseRoutes(peers, rank, "", MemoryKind::kHost);
    for (int peer = 0; peer < 5; ++peer) {
      std::string expected = peer == rank ? "self" : peers[peer].hostHash == peers[rank].hostHash ? "shm" : "net";
      EXPECT_EQ(routeName(routes, peer), expected) << rank << " -> " << peer;
      // Both ends of a pair agree.
      EXPECT_EQ(routeName(chooseRoutes(peers, peer, "", MemoryKind::kHost), rank), routeName(routes, peer));
    }
    ASSERT_EQ(routes.localGroups.size(), 2u);
    EXPECT_EQ(routes.localGroups[0], (std::vector<int>{0, 2}));
    EXPECT_EQ(routes.localGroups[1], (std::vector<int>{1, 3, 4}));
    std::vector<std::string> used;
    for (const TransportEntry* t : routes.used) used.push_back(t->name);
    EXPECT_EQ(used, (std::vector<std::string>{"self", "shm", "net"}));
    EXPECT_EQ(routes.groupOf(rank), peers[rank].hostHash == 1000 ? 0 : 1);
  }
}

TEST(Routes, MembersAreTheRanksAnEntryReaches) {
  auto peers = ranksOn({0, 1, 0, 1});
  Routes routes = chooseRoutes(peers, 0, "", MemoryKind::kHost);
  for (const TransportEntry* t : routes.used) {
    std::vector<int> members = routes.membersOf(t);
    std::string name = t->name;
    std::vector<int> expected = name == "self"  ? std::vector<int>{0}
                                : name == "shm" ? std::vector<int>{2}
                                                : std::vector<int>{1, 3};
    EXPECT_EQ(members, expected) << name;
  }
}

TEST(Routes, OneHostUsesNoSockets) {
  auto peers = ranksOn({0, 0, 0});
  Routes routes = chooseRoutes(peers, 1, "", MemoryKind::kHost);
  std::vector<std::string> used;
  for (const TransportEntry* t : routes.used) used.push_back(t->name);
  EXPECT_EQ(used, (std::vector<std::string>{"self", "shm"}));
  ASSERT_EQ(routes.localGroups.size(), 1u);
  EXPECT_EQ(routes.localGroups[0], (std::vector<int>{0, 1, 2}));
}

TEST(Routes, SharedMemorySwitchedOffMakesEveryRankItsOwnGroup) {
  auto peers = ranksOn({0, 0, 0});
  Routes routes = chooseRoutes(peers, 0, "^shm", MemoryKind::kHost);
  EXPECT_EQ(routeName(routes, 0), "self");  // self cannot be switched off
  EXPECT_EQ(routeName(routes, 1), "net");
  EXPECT_EQ(routeName(routes, 2), "net");
  EXPECT_EQ(routes.localGroups.size(), 3u);
  // Naming only the network transport keeps self too.
  EXPECT_EQ(routeName(chooseRoutes(peers, 0, "net", MemoryKind::kHost), 0), "self");
}

TEST(Routes, NoTransportForAPairIsRefusedNamingIt) {
  auto peers = ranksOn({0, 1});
  try {
    chooseRoutes(peers, 0, "shm", MemoryKind::kHost);
    ADD_FAILURE() << "two hosts with shared memory only were accepted";
  } catch (const CollError& e) {
    EXPECT_EQ(e.code(), collInvalidUsage);
    std::string message = e.what();
    EXPECT_NE(message.find("no transport connects rank 0 and rank 1"), std::string::npos) << message;
    EXPECT_NE(message.find("COLL_TRANSPORTS=\"shm\""), std::string::npos) << message;
    EXPECT_NE(message.find("different hosts"), std::string::npos) << message;
  }
}

TEST(Routes, DeviceMemoryRoutesThroughP2pOnOneHostAndIsStagedElsewhere) {
  auto peers = ranksOn({0, 0});
  Routes routes = chooseRoutes(peers, 0, "", MemoryKind::kDevice);
  EXPECT_EQ(routeName(routes, 0), "p2p");
  EXPECT_EQ(routeName(routes, 1), "p2p");
  // Other hosts: staged through pinned host memory; so is everything with P2P switched off.
  routes = chooseRoutes(ranksOn({0, 1}), 0, "", MemoryKind::kDevice);
  EXPECT_EQ(routeName(routes, 0), "p2p");
  EXPECT_EQ(routeName(routes, 1), "staged");
  routes = chooseRoutes(peers, 0, "^p2p", MemoryKind::kDevice);
  EXPECT_EQ(routeName(routes, 0), "staged");
  EXPECT_EQ(routeName(routes, 1), "staged");
  // Two hosts of one machine (COLL_HOSTID, namespaces) do not share GPU memory through P2P.
  auto split = ranksOn({0, 0});
  split[1].hostHash = 7;
  EXPECT_EQ(routeName(chooseRoutes(split, 0, "", MemoryKind::kDevice), 1), "staged");
  EXPECT_THROW(chooseRoutes(ranksOn({0, 1}), 0, "^staged", MemoryKind::kDevice), CollError);
}

TEST(TransportTable, NamesAndSpecs) {
  EXPECT_EQ(transportNames(),
            "self, shm, net, p2p, staged, verbs");  // verbs is listed always, used only when asked for
  EXPECT_NO_THROW(validateTransportSpec("^shm"));
  EXPECT_NO_THROW(validateTransportSpec("shm,net"));
  try {
    validateTransportSpec("shm,ib");
    ADD_FAILURE() << "an unknown transport was accepted";
  } catch (const CollError& e) {
    EXPECT_EQ(e.code(), collInvalidUsage);
    EXPECT_NE(std::string(e.what()).find("unknown transport \"ib\""), std::string::npos) << e.what();
  }
}

// Verbs is opt-in: with a device on every rank, it carries nothing unless COLL_TRANSPORTS selects
// it and leaves sockets out; without a device on both ends it never connects a pair.
TEST(Routes, VerbsOnlyWhenAskedForAndBothEndsHaveADevice) {
  auto peers = ranksOn({0, 1, 2});
  for (auto& p : peers) p.verbsDevice = 1;
  EXPECT_FALSE(verbsRequested(""));
  EXPECT_TRUE(verbsRequested("verbs"));
  EXPECT_TRUE(verbsRequested("^shm,net"));
  EXPECT_FALSE(verbsRequested("shm,net"));
  for (const std::string spec : {"", "^shm", "net,verbs", "shm,net"})
    EXPECT_EQ(routeName(chooseRoutes(peers, 0, spec, MemoryKind::kHost), 1), "net") << spec;
  for (const std::string spec : {"verbs", "^shm,net"}) {
    Routes routes = chooseRoutes(peers, 0, spec, MemoryKind::kHost);
    EXPECT_EQ(routeName(routes, 1), "verbs") << spec;
    EXPECT_EQ(routeName(routes, 0), "self") << spec;
    EXPECT_EQ(routes.membersOf(routes.toRank[1]), (std::vector<int>{1, 2})) << spec;
  }
  peers[2].verbsDevice = 0;
  EXPECT_THROW(chooseRoutes(peers, 0, "verbs", MemoryKind::kHost), CollError);
}

}  // namespace
}  // namespace transport
}  // namespace coll
