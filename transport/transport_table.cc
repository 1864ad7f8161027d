#include "transport/transport_table.h"

#include <algorithm>

#include "common/error.h"
#include "common/list_spec.h"
#include "transport/net/net_domain.h"
#include "transport/net/net_settings.h"
#include "transport/p2p/p2p_domain.h"
#include "transport/self/self_domain.h"
#include "transport/shm/shm_domain.h"
#include "transport/shm/shm_settings.h"
#include "transport/staged/staged_domain.h"
#include "transport/staged/staged_settings.h"
#include "transport/verbs/verbs_domain.h"
#include "transport/verbs/verbs_settings.h"

namespace coll {
namespace transport {
namespace {

bool sameRank(const PeerInfo& self, const PeerInfo& peer) { return self.rank == peer.rank; }
bool sameHost(const PeerInfo& self, const PeerInfo& peer) { return self.hostHash == peer.hostHash; }
// Sockets reach any rank: another host over its network, or this one over loopback.
bool anyRank(const PeerInfo&, const PeerInfo&) { return true; }
// Device memory maps directly between ranks of one host and kernel (onOneHostAndKernel, so that
// one machine can stand for several in tests, as it does for host memory) whose GPUs reach each
// other (one device island); the other pairs of a host stage through host memory.
bool sameDeviceIsland(const PeerInfo& self, const PeerInfo& peer) {
  return onOneHostAndKernel(self, peer) && self.deviceIsland == peer.deviceIsland;
}
// Verbs reaches any rank whose process found a device, like sockets; both ends must have one.
bool bothHaveVerbs(const PeerInfo& self, const PeerInfo& peer) { return self.verbsDevice != 0 && peer.verbsDevice != 0; }

}  // namespace

const std::vector<TransportEntry>& transportTable() {
  // The prices: shared memory's and the sockets' from the measurements in docs/performance.md;
  // verbs' from what a 100 Gb/s InfiniBand or RoCE port gives (a small RDMA write with its
  // completion, and the port's rate): no RDMA device was ever measured here, so these are the
  // fabric's nominal figures, to be overridden where one is. p2p: between GPUs of one host
  // (NVLink or PCIe peer access): a flag's round trip between kernels and the rate of a
  // peer-to-peer copy. staging: what device memory adds to a network hop when it goes through
  // pinned host memory (the kernels' writes and reads over PCIe, the proxies' hand-offs at both
  // ends): its latency adds to the network's, and the pipelined hop goes at the slower of the two
  // rates (stagedLink). Nominal figures (an H100's PCIe 5 and NVLink 4, derated) until a GPU run
  // measures them: docs/cuda.md says how. (design value)
  static const std::vector<TransportEntry> table = {
      // Priced as shared memory (pricedEntry): a rank's sends to itself are copies in its memory.
      {/*name=*/"self", /*priority=*/1000, MemoryKind::kHost, LinkKind::kLocal, /*canConnect=*/sameRank,
       /*create=*/makeSelfDomain, /*optional=*/false},
      {/*name=*/"shm", /*priority=*/100, MemoryKind::kHost, LinkKind::kLocal, /*canConnect=*/sameHost,
       /*create=*/makeShmDomain, /*optional=*/true, /*optIn=*/false, /*readSettings=*/readShmSettings,
       /*shareSettings=*/shareShmSettings, /*describeLocal=*/nullptr, /*price=*/{"shm", 1.5, 10000.0}},
      {/*name=*/"net", /*priority=*/10, MemoryKind::kHost, LinkKind::kNetwork, /*canConnect=*/anyRank,
       /*create=*/makeNetDomain, /*optional=*/true, /*optIn=*/false, /*readSettings=*/readNetSettings,
       /*shareSettings=*/shareNetSettings, /*describeLocal=*/nullptr, /*price=*/{"socket", 8.0, 2000.0}},
      {/*name=*/"p2p", /*priority=*/100, MemoryKind::kDevice, LinkKind::kLocal, /*canConnect=*/sameDeviceIsland,
       /*create=*/makeP2pDomain, /*optional=*/true, /*optIn=*/false, /*readSettings=*/nullptr,
       /*shareSettings=*/nullptr, /*describeLocal=*/nullptr, /*price=*/{"p2p", 2.0, 100000.0}},
      // Device memory wherever P2P cannot reach: staged through pinned host memory by a proxy
      // thread over the host transport between the two ranks (transport/staged). Its price is
      // what staging adds to the host network's (stagedLink).
      {/*name=*/"staged", /*priority=*/10, MemoryKind::kDevice, LinkKind::kNetwork, /*canConnect=*/anyRank,
       /*create=*/makeStagedDomain, /*optional=*/true, /*optIn=*/false, /*readSettings=*/readStagedSettings,
       /*shareSettings=*/nullptr, /*describeLocal=*/nullptr, /*price=*/{"staging", 6.0, 20000.0}},
      // Below sockets, and opt-in: where both can connect, sockets win unless COLL_TRANSPORTS
      // leaves them out ("verbs", "^shm,net"). The planner prices it as a network hop.
      {/*name=*/"verbs", /*priority=*/5, MemoryKind::kHost, LinkKind::kNetwork, /*canConnect=*/bothHaveVerbs,
       /*create=*/makeVerbsDomain, /*optional=*/true, /*optIn=*/true, /*readSettings=*/readVerbsSettings,
       /*shareSettings=*/nullptr, /*describeLocal=*/describeVerbsHere, /*price=*/{"verbs", 3.0, 12000.0}},
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

PeerInfo describeLocalTransports(int rank, const std::string& hostId, const std::string& spec) {
  PeerInfo self = describeLocalRank(rank, hostId);
  for (const TransportEntry& t : transportTable())
    if (t.describeLocal != nullptr && transportEnabled(spec, t)) t.describeLocal(&self);
  return self;
}

std::vector<const TransportEntry*> pricedEntries() {
  std::vector<const TransportEntry*> entries;
  for (MemoryKind memory : {MemoryKind::kHost, MemoryKind::kDevice})
    for (const TransportEntry& t : transportTable())
      if (t.memory == memory && t.price.name != nullptr) entries.push_back(&t);
  return entries;
}

const TransportEntry& pricedEntry(MemoryKind memory, LinkKind link, const std::vector<const TransportEntry*>& used) {
  const TransportEntry* best = nullptr;
  const TransportEntry* bestUsed = nullptr;
  for (const TransportEntry* t : pricedEntries()) {
    if (t->memory != memory || t->link != link) continue;
    if (best == nullptr || t->priority > best->priority) best = t;
    const bool isUsed = std::find(used.begin(), used.end(), t) != used.end();
    if (isUsed && (bestUsed == nullptr || t->priority > bestUsed->priority)) bestUsed = t;
  }
  if (best == nullptr) throwError(collInternalError, "the transport table prices no link of this kind");
  return bestUsed != nullptr ? *bestUsed : *best;
}

}  // namespace transport
}  // namespace coll
