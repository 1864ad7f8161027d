#include "transport/transport_table.h"

#include "common/error.h"
#include "common/list_spec.h"
#include "transport/net/net_domain.h"
#include "transport/p2p/p2p_domain.h"
#include "transport/self/self_domain.h"
#include "transport/shm/shm_domain.h"
#include "transport/staged/staged_domain.h"
#include "transport/verbs/verbs_domain.h"

namespace coll {
namespace transport {
namespace {

bool sameRank(const PeerInfo& self, const PeerInfo& peer) { return self.rank == peer.rank; }
bool sameHost(const PeerInfo& self, const PeerInfo& peer) { return self.hostHash == peer.hostHash; }
// Sockets reach any rank: another host over its network, or this one over loopback.
bool anyRank(const PeerInfo&, const PeerInfo&) { return true; }
// CUDA IPC handles open in processes of one kernel (whatever their namespaces); ranks of other
// hosts (another namespace, or COLL_HOSTID) stage device memory as if the host were another
// machine, so that one machine can stand for several in tests, as it does for host memory.
bool sameHostAndKernel(const PeerInfo& self, const PeerInfo& peer) {
  return self.kernelHash == peer.kernelHash && self.hostHash == peer.hostHash;
}
// Verbs reaches any rank whose process found a device, like sockets; both ends must have one.
bool bothHaveVerbs(const PeerInfo& self, const PeerInfo& peer) { return self.verbsDevice != 0 && peer.verbsDevice != 0; }

}  // namespace

const std::vector<TransportEntry>& transportTable() {
  static const std::vector<TransportEntry> table = {
      {/*name=*/"self", /*priority=*/1000, MemoryKind::kHost, LinkKind::kLocal, /*canConnect=*/sameRank,
       /*create=*/makeSelfDomain, /*optional=*/false},
      {/*name=*/"shm", /*priority=*/100, MemoryKind::kHost, LinkKind::kLocal, /*canConnect=*/sameHost,
       /*create=*/makeShmDomain, /*optional=*/true},
      {/*name=*/"net", /*priority=*/10, MemoryKind::kHost, LinkKind::kNetwork, /*canConnect=*/anyRank,
       /*create=*/makeNetDomain, /*optional=*/true},
      {/*name=*/"p2p", /*priority=*/100, MemoryKind::kDevice, LinkKind::kLocal, /*canConnect=*/sameHostAndKernel,
       /*create=*/makeP2pDomain, /*optional=*/true},
      // Device memory wherever P2P cannot reach: staged through pinned host memory by a proxy
      // thread over the host transport between the two ranks (transport/staged).
      {/*name=*/"staged", /*priority=*/10, MemoryKind::kDevice, LinkKind::kNetwork, /*canConnect=*/anyRank,
       /*create=*/makeStagedDomain, /*optional=*/true},
      // Below sockets, and opt-in: where both can connect, sockets win unless COLL_TRANSPORTS
      // leaves them out ("verbs", "^shm,net"). The planner prices it as a network hop.
      {/*name=*/"verbs", /*priority=*/5, MemoryKind::kHost, LinkKind::kVerbs, /*canConnect=*/bothHaveVerbs,
       /*create=*/makeVerbsDomain, /*optional=*/true, /*optIn=*/true},
  };
  return table;
}

std::string transportNames() {
  std::string names;
  for (const TransportEntry& t : transportTable()) names += (names.empty() ? "" : ", ") + std::string(t.name);
  return names;
}

void validateTransportSpec(const std::string& spec) {
  NameSelection selection = NameSelection::parse(spec);
  for (const std::string& name : selection.names()) {
    bool known = false;
    for (const TransportEntry& t : transportTable()) known = known || name == t.name;
    if (!known)
      throwError(collInvalidUsage, "COLL_TRANSPORTS=\"%s\": unknown transport \"%s\"; this build has: %s", spec.c_str(),
                 name.c_str(), transportNames().c_str());
  }
}

bool transportEnabled(const std::string& spec, const TransportEntry& entry) {
  if (spec.empty()) return !entry.optIn;
  return !entry.optional || NameSelection::parse(spec).selects(entry.name);
}

bool verbsRequested(const std::string& spec) {
  for (const TransportEntry& t : transportTable())
    if (std::string(t.name) == "verbs") return transportEnabled(spec, t);
  return false;
}

}  // namespace transport
}  // namespace coll
