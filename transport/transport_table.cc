#include "transport/transport_table.h"

#include "common/error.h"
#include "common/list_spec.h"

namespace coll {
namespace transport {
namespace {

bool sameHost(const PeerInfo& self, const PeerInfo& peer) { return self.hostHash == peer.hostHash; }
// Sockets reach any rank: another host over its network, or this one over loopback.
bool anyRank(const PeerInfo&, const PeerInfo&) { return true; }

}  // namespace

const std::vector<TransportDescriptor>& transportTable() {
  static const std::vector<TransportDescriptor> table = {
      {/*name=*/"shm", /*priority=*/100, /*canConnect=*/sameHost},
      {/*name=*/"net", /*priority=*/10, /*canConnect=*/anyRank},
  };
  return table;
}

std::string transportNames() {
  std::string names;
  for (const TransportDescriptor& t : transportTable()) names += (names.empty() ? "" : ", ") + std::string(t.name);
  return names;
}

void validateTransportSpec(const std::string& spec) {
  NameSelection selection = NameSelection::parse(spec);
  for (const std::string& name : selection.names()) {
    bool known = false;
    for (const TransportDescriptor& t : transportTable()) known = known || name == t.name;
    if (!known)
      throwError(collInvalidUsage, "COLL_TRANSPORTS=\"%s\": unknown transport \"%s\"; this build has: %s", spec.c_str(),
                 name.c_str(), transportNames().c_str());
  }
}

bool transportEnabled(const std::string& spec, const char* name) {
  return spec.empty() || NameSelection::parse(spec).selects(name);
}

const TransportDescriptor* chooseTransport(const PeerInfo& self, const PeerInfo& peer, const std::string& spec) {
  const TransportDescriptor* best = nullptr;
  for (const TransportDescriptor& t : transportTable()) {
    if (!transportEnabled(spec, t.name) || !t.canConnect(self, peer)) continue;
    if (best == nullptr || t.priority > best->priority) best = &t;
  }
  return best;
}

}  // namespace transport
}  // namespace coll
