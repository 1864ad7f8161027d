// The P2P transport: one rank's channel memory on its GPU, one receive region per peer
// (kernels/cuda/channel_layout.h) in a single cudaMalloc allocation which the peers map and
// write into (p2p_connection.h), and the peers' regions this rank writes into. Several ranks may
// share one GPU; ranks on different GPUs need peer access between them (enabled where the
// devices allow it). It carries device memory: the device engine (src/exec/device_engine.h)
// drives its channels through the DeviceChannels capability; it has no host connections.
//
// Setup is one round (transport/domain.h): card() publishes the allocation (p2p_card.h),
// connect() maps every member's. Bytes from peers are checked before use. Tearing down must wait
// until no peer writes any more: the caller puts a barrier before destroying the domain.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "transport/device_channels.h"
#include "transport/domain.h"
#include "transport/ipc_call_buffers.h"

namespace coll {
namespace transport {

class P2pConnection;  // p2p_connection.h

class P2pDomain : public Domain, public DeviceChannels {
 public:
  // Allocates and zeroes this rank's receive regions on settings->device (made the current device).
  explicit P2pDomain(const DomainArgs& args);
  ~P2pDomain() override;
  P2pDomain(const P2pDomain&) = delete;
  P2pDomain& operator=(const P2pDomain&) = delete;
  const char* name() const override { return "p2p"; }

  std::string card(int round) override;
  // cards[r] is rank r's card (this rank's own included). Throws collInvalidUsage for a peer whose
  // card is malformed or from a different build, or whose GPU this one cannot reach.
  void connect(int round, const std::vector<std::string>& cards, Deadline deadline) override;

  // Device memory only: the host executor never routes through this domain.
  SendConnection* sendConnection(int peer) override;
  RecvConnection* recvConnection(int peer) override;

  // The kernels report on themselves (a wait past its deadline, an abort) through the status
  // word: this throws that, so that a waiting host call sees a device failure too.
  void checkPeers() const override;
  void announceFailure(const std::string& reason) override { requestAbort(); }

  DeviceChannels* deviceChannels() override { return this; }

  // DeviceChannels.
  int device() const override { return device_; }
  // Each GPU serves the ranks of one process only (threads of one process share a context; two
  // GPUs run independently) and holds all their lanes at once: kernels may wait on each other
  // (concurrent mode). Otherwise kernels time-slice or queue and must not (serialized mode).
  bool kernelsConcurrent() const override { return kernelsConcurrent_; }
  bool sharedAddressSpace() const override { return sharedAddressSpace_; }
  const std::vector<device::PeerChannels>& hostTable() const override { return table_; }
  const device::PeerChannels* deviceTable() const override { return deviceTable_; }
  device::DeviceStatus* deviceStatus() const override { return deviceStatus_; }
  const volatile device::DeviceStatus* hostStatus() const override { return hostStatus_; }
  unsigned long long* laneBarrier() const override { return laneBarrier_; }
  void* scratch() const override { return scratch_; }
  void requestAbort() override;
  // Rank processes all on this GPU with their kernels side by side (MPS): the direct all-reduce
  // maps the peers' call buffers (ipc_call_buffers.h).
  bool mapsCallBuffers() const override { return mapsCallBuffers_; }
  void mapCallBuffers(const void* send, void* recv, uint64_t bytes, const ExchangeRecords& exchange,
                      const std::function<void()>& quiesce, const char** sends, char** recvs) override;

 private:
  void release() noexcept;

  int rank_;
  int nranks_;
  int device_;
  bool kernelsConcurrent_ = false;
  bool sharedAddressSpace_ = false;
  bool mapsCallBuffers_ = false;
  std::vector<bool> sameProcess_;                            // per rank: a thread of this process
  std::unique_ptr<IpcDriver> ipcDriver_;                     // made at the first mapCallBuffers
  std::unique_ptr<IpcCallBuffers> callBuffers_;              // closes its mappings before the driver goes
  char* regions_ = nullptr;                                  // nranks_ receive regions, one per sender
  std::vector<std::unique_ptr<P2pConnection>> connections_;  // per rank
  std::vector<device::PeerChannels> table_;
  device::PeerChannels* deviceTable_ = nullptr;
  device::DeviceStatus* hostStatus_ = nullptr;  // cudaHostAlloc'd, mapped
  device::DeviceStatus* deviceStatus_ = nullptr;
  unsigned long long* laneBarrier_ = nullptr;
  void* scratch_ = nullptr;
};

// Throws collInvalidUsage in a build without CUDA (p2p_without_cuda.cc).
std::unique_ptr<Domain> makeP2pDomain(const DomainArgs& args);

}  // namespace transport
}  // namespace coll
