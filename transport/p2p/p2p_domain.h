// One rank's P2P memory on its GPU: one receive region per peer (kernels/cuda/channel_layout.h)
// in a single cudaMalloc allocation, which the peers map and write into, and the peers' regions
// this rank writes into. Ranks in other processes map the allocation through a CUDA IPC handle;
// ranks that are threads of this process use the pointer itself (CUDA refuses to open a handle in
// the process that made it). Several ranks may share one GPU; ranks on different GPUs need peer
// access between them (enabled here where the devices allow it).
//
// Setup in two phases, like every transport: locator() is a fixed-size blob the caller
// all-gathers (through the bootstrap store), connect() maps what the peers sent. Bytes from peers
// are checked before use. Tearing down must wait until no peer writes any more: the caller puts a
// barrier before destroying the domain.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cuda/channel_layout.h"

namespace coll {
namespace transport {

class P2pDomain {
 public:
  // Allocates and zeroes this rank's receive regions on `device` (made the current device).
  P2pDomain(int rank, int nranks, int device);
  ~P2pDomain();
  P2pDomain(const P2pDomain&) = delete;
  P2pDomain& operator=(const P2pDomain&) = delete;

  std::vector<uint8_t> locator() const;
  // locators[r] is rank r's locator (this rank's own included). Throws collInvalidUsage for a peer
  // whose locator is malformed or from a different build, or whose GPU this one cannot reach.
  void connect(const std::vector<std::vector<uint8_t>>& locators);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  int device() const { return device_; }
  // Each GPU serves the ranks of one process only (threads of one process share a context; two
  // GPUs run independently) and holds all their lanes at once: kernels may wait on each other
  // (concurrent mode). Otherwise kernels time-slice or queue and must not (serialized mode).
  bool kernelsConcurrent() const { return kernelsConcurrent_; }

  // Per rank: where this rank reads what the rank sends it, and where it writes what it sends.
  const std::vector<device::PeerChannels>& hostTable() const { return table_; }
  const device::PeerChannels* deviceTable() const { return deviceTable_; }
  // The kernels' status word: host-mapped memory, readable at any time without synchronizing.
  device::DeviceStatus* deviceStatus() const { return deviceStatus_; }
  const volatile device::DeviceStatus* hostStatus() const { return hostStatus_; }
  // Asks this rank's running and future kernels to stop at their next wait.
  void requestAbort();
  unsigned long long* laneBarrier() const { return laneBarrier_; }
  // 16 bytes of device memory, for calls without buffers (barrier).
  void* scratch() const { return scratch_; }

 private:
  void release() noexcept;

  int rank_;
  int nranks_;
  int device_;
  bool kernelsConcurrent_ = false;
  char* regions_ = nullptr;        // nranks_ receive regions, one per sender
  std::vector<char*> peerBases_;   // each peer's allocation as mapped here (nullptr: not mapped)
  std::vector<bool> openedByIpc_;  // whether peerBases_[r] must be closed with cudaIpcCloseMemHandle
  std::vector<device::PeerChannels> table_;
  device::PeerChannels* deviceTable_ = nullptr;
  device::DeviceStatus* hostStatus_ = nullptr;  // cudaHostAlloc'd, mapped
  device::DeviceStatus* deviceStatus_ = nullptr;
  unsigned long long* laneBarrier_ = nullptr;
  void* scratch_ = nullptr;
};

}  // namespace transport
}  // namespace coll
