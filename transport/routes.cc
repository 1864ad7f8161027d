#include "transport/routes.h"

#include <algorithm>
#include <numeric>

#include "common/error.h"

namespace coll {
namespace transport {
namespace {

// Ranks that run in one place (host, machine, kernel and device island alike) are interchangeable
// to every entry's canConnect but for "is it the same rank": routes are decided once per pair of
// places.
bool samePlace(const PeerInfo& a, const PeerInfo& b) {
  return a.hostHash == b.hostHash && a.machineHash == b.machineHash && a.kernelHash == b.kernelHash &&
         a.deviceIsland == b.deviceIsland;
}

const TransportEntry* best(const std::vector<const TransportEntry*>& enabled, const PeerInfo& a, const PeerInfo& b) {
  const TransportEntry* chosen = nullptr;
  for (const TransportEntry* t : enabled) {
    if (!t->canConnect(a, b)) continue;
    if (chosen == nullptr || t->priority > chosen->priority) chosen = t;
  }
  return chosen;
}

// Finds the root of a union-find forest.
int rootOf(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

}  // namespace

std::vector<int> Routes::membersOf(const TransportEntry* entry) const {
  std::vector<int> members;
  for (int r = 0; r < static_cast<int>(toRank.size()); ++r)
    if (toRank[r] == entry) members.push_back(r);
  return members;
}

int Routes::groupOf(int rank) const {
  for (int g = 0; g < static_cast<int>(localGroups.size()); ++g)
    if (std::binary_search(localGroups[g].begin(), localGroups[g].end(), rank)) return g;
  return -1;
}

Routes chooseRoutes(const std::vector<PeerInfo>& peers, int rank, const std::string& spec, MemoryKind memory) {
  std::vector<const TransportEntry*> enabled;
  for (const TransportEntry& t : transportTable())
    if (t.memory == memory && transportEnabled(spec, t)) enabled.push_back(&t);
  const int n = static_cast<int>(peers.size());
  // Places, and two ranks of each (the second only where the place has one).
  std::vector<int> placeOf(n), first, second;
  for (int r = 0; r < n; ++r) {
    int p = 0;
    while (p < static_cast<int>(first.size()) && !samePlace(peers[first[p]], peers[r])) ++p;
    if (p == static_cast<int>(first.size()))
      first.push_back(r), second.push_back(-1);
    else if (second[p] < 0)
      second[p] = r;
    placeOf[r] = p;
  }
  const int places = static_cast<int>(first.size());
  auto fail = [&](int a, int b) {
    throwError(collInvalidUsage,
               "communicator init: no transport connects rank %d and rank %d (%s; COLL_TRANSPORTS=\"%s\"); this "
               "build has: %s",
               a, b,
               a == b                                   ? "the same rank"
               : peers[a].hostHash == peers[b].hostHash ? "same host"
                                                        : "different hosts",
               spec.c_str(), transportNames().c_str());
  };
  // choice[p][q]: between two different ranks of places p and q; self[p]: a rank of p to itself.
  std::vector<std::vector<const TransportEntry*>> choice(places, std::vector<const TransportEntry*>(places));
  std::vector<const TransportEntry*> self(places);
  Routes routes;
  auto use = [&](const TransportEntry* t) {
    if (std::find(routes.used.begin(), routes.used.end(), t) == routes.used.end()) routes.used.push_back(t);
  };
  for (int p = 0; p < places; ++p) {
    if (!(self[p] = best(enabled, peers[first[p]], peers[first[p]]))) fail(first[p], first[p]);
    use(self[p]);
    for (int q = 0; q < places; ++q) {
      int a = first[p], b = p == q ? second[q] : first[q];
      if (b < 0) continue;  // a place of one rank has no pair of different ranks in it
      if (!(choice[p][q] = best(enabled, peers[a], peers[b]))) fail(a, b);
      use(choice[p][q]);
    }
  }
  std::sort(routes.used.begin(), routes.used.end());  // the table is a vector: address order is table order
  routes.toRank.resize(n);
  for (int r = 0; r < n; ++r) routes.toRank[r] = r == rank ? self[placeOf[r]] : choice[placeOf[rank]][placeOf[r]];
  // Local groups: ranks joined by local routes (union-find over ranks, pairs taken per place).
  auto local = [](const TransportEntry* t) { return t != nullptr && t->link == LinkKind::kLocal; };
  std::vector<std::vector<int>> ranksOf(places);
  for (int r = 0; r < n; ++r) ranksOf[placeOf[r]].push_back(r);
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto join = [&](int a, int b) { parent[rootOf(parent, a)] = rootOf(parent, b); };
  for (int p = 0; p < places; ++p) {
    if (local(choice[p][p]))
      for (int r : ranksOf[p]) join(r, first[p]);
    for (int q = p + 1; q < places; ++q) {
      if (!local(choice[p][q])) continue;
      for (int r : ranksOf[p]) join(r, first[q]);
      for (int r : ranksOf[q]) join(r, first[p]);
    }
  }
  std::vector<int> groupOfRoot(n, -1);
  for (int r = 0; r < n; ++r) {
    int root = rootOf(parent, r);
    if (groupOfRoot[root] < 0) {
      groupOfRoot[root] = static_cast<int>(routes.localGroups.size());
      routes.localGroups.emplace_back();
    }
    routes.localGroups[groupOfRoot[root]].push_back(r);
  }
  return routes;
}

}  // namespace transport
}  // namespace coll
