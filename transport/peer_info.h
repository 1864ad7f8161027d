// What one rank tells the others about itself at init, before any transport exists: where it
// runs (to group ranks by host and by machine), its process (to watch it and to read its memory),
// and a word peers read to learn whether they may read its memory at all. The communicator
// all-gathers every rank's PeerInfo; the transport table decides routes from them.
#pragma once

#include <cstdint>
#include <string>

namespace coll {
namespace transport {

struct PeerInfo {
  int rank = -1;
  // Whether this rank can use IB verbs: only looked for when COLL_TRANSPORTS asks for verbs
  // (verbsRequested), so that nothing loads libibverbs otherwise. Both ends need it.
  int32_t verbsDevice = 0;
  uint64_t hostHash = 0;     // equal for ranks on one host (hostname, boot id, network namespace; or COLL_HOSTID)
  uint64_t machineHash = 0;  // equal for ranks on one kernel and network namespace (loopback reaches them)
  uint64_t kernelHash = 0;   // equal for ranks on one kernel, whatever their namespaces (they share its cores)
  int32_t pid = 0;
  uint64_t processToken = 0;  // distinguishes processes that reuse a pid (equal for threads of one process)
  // A word of this process's memory and its value: a peer that reads the value back with
  // process_vm_readv may copy straight out of this process (cross-memory attach).
  uint64_t memoryProbeAddress = 0;
  uint64_t memoryProbeValue = 0;
  // Ranks of one host whose GPUs map each other's memory (device_reach.h), told apart at the
  // communicator's first call with a stream; 0 until then, and for every rank where it never
  // comes (host memory only): one island per host and kernel, as the device routes assume.
  uint64_t deviceIsland = 0;
};

// Whether two ranks run on one host and one kernel: CUDA IPC handles open in processes of one
// kernel (whatever their namespaces); ranks of other hosts (another namespace, or COLL_HOSTID)
// stage device memory as if the host were another machine.
inline bool onOneHostAndKernel(const PeerInfo& a, const PeerInfo& b) {
  return a.kernelHash == b.kernelHash && a.hostHash == b.hostHash;
}

// Describes this process as rank `rank`. hostId (COLL_HOSTID) overrides the host identity; tests
// use it to make ranks of one machine different hosts.
PeerInfo describeLocalRank(int rank, const std::string& hostId);

}  // namespace transport
}  // namespace coll
