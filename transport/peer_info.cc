#include "transport/peer_info.h"

#include <unistd.h>

#include <fstream>

#include "common/hash.h"
#include "common/net_interfaces.h"

namespace coll {
namespace transport {
namespace {

// The word peers read back to probe cross-memory attach: one per process, set once from the
// process's identity, so every communicator of the process can publish its address.
// Writable (not const, so not on a read-only page): peers' probes write its value back.
const uint64_t& memoryProbeWordRef(uint64_t processToken) {
  static uint64_t word = processToken ^ 0x636f6c6c70726f62ull;
  return word;
}

}  // namespace

PeerInfo describeLocalRank(int rank, const std::string& hostId) {
  PeerInfo self;
  self.rank = rank;
  self.pid = static_cast<int32_t>(getpid());
  const std::string host = localHostName();
  std::ifstream bootId("/proc/sys/kernel/random/boot_id");
  std::string boot;
  std::getline(bootId, boot);
  // A network namespace is a host as far as sockets go: its loopback reaches only itself. Ranks
  // in different namespaces (containers, or the namespaces the multi-host tests build) are
  // therefore different hosts unless COLL_HOSTID says otherwise.
  char netns[64] = {0};
  ssize_t len = readlink("/proc/self/ns/net", netns, sizeof(netns) - 1);
  std::string machine = host + "/" + boot + "/" + (len > 0 ? std::string(netns, len) : "");
  self.machineHash = Fnv1a().add(machine).value();
  self.kernelHash = Fnv1a().add(host + "/" + boot).value();
  self.hostHash = Fnv1a().add(hostId.empty() ? machine : hostId).value();
  self.processToken = Fnv1a().add(machine).add(static_cast<uint64_t>(self.pid)).value();
  const uint64_t& word = memoryProbeWordRef(self.processToken);
  self.memoryProbeAddress = reinterpret_cast<uint64_t>(&word);
  self.memoryProbeValue = word;
  return self;
}

}  // namespace transport
}  // namespace coll
