// The staged transport: device memory between ranks whose GPUs cannot reach each other's memory
// (other hosts; or GPUs of one host without peer access, or with P2P switched off), moved through
// pinned host memory by a proxy thread over the host transports (docs/cuda.md, "Device memory
// across hosts").
//
// Where things live. For every staged peer this rank holds two regions of pinned host memory,
// mapped into its GPU, cut as the kernels cut a P2P connection (staging_layout.h): the send
// region, into which this rank's kernels write what they send the peer (and raise the slot's ready
// flag), and the receive region, from which they reduce or copy what the peer sent (and clear the
// flag). The kernels do not know the difference: the peer table they get points at these regions
// where it would point at a peer's GPU memory. Between the regions of two ranks the proxy
// (staging_proxy.h) moves the slices over a carrier: the host domain that connects the two ranks
// for host memory (staged_carriers.h), a private instance with its own connections, since host
// calls run while device calls are in flight. A rank's staging to itself is one region in device
// memory that is both.
//
// The domain is also the kernels' DeviceChannels: their status word (host-mapped), lane barrier,
// scratch and peer table; where P2P serves the ranks of this host, it adopts the P2P domain's
// channels to them (adoptPeers), so that one kernel reaches every peer.
//
// With COLL_STAGED_RECV=copy the receive region's slots are also kept in device memory: the proxy
// lands a slice in the pinned slot, a copy engine moves it into the device slot, and the kernels
// reduce from there (their peer table's recvSlots), the flags staying in the pinned region.
//
// Setup: the carriers' rounds, nested (staged_card.h). After setup the proxy starts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/device_channels.h"
#include "transport/domain.h"
#include "transport/staged/staged_card.h"
#include "transport/staged/staging_layout.h"
#include "transport/staged/staging_memory.h"
#include "transport/staged/staging_proxy.h"

namespace coll {
namespace transport {

class StagedDomain : public Domain, public DeviceChannels {
 public:
  // Allocates the regions and makes the carrier domains. `geometry` must be the build's Simple
  // geometry for real kernels; the host tests pass smaller ones.
  StagedDomain(const DomainArgs& args, std::unique_ptr<StagingMemory> memory,
               device::ChannelGeometry geometry = device::kSimpleGeometry);
  ~StagedDomain() override;
  StagedDomain(const StagedDomain&) = delete;
  StagedDomain& operator=(const StagedDomain&) = delete;
  const char* name() const override { return "staged"; }

  int setupRounds() const override;
  std::string card(int round) override;
  void connect(int round, const std::vector<std::string>& cards, Deadline deadline) override;
  void setupDone() override;

  // Device memory only: the host executor never routes through this domain.
  SendConnection* sendConnection(int peer) override;
  RecvConnection* recvConnection(int peer) override;

  // The proxy's failure (a carrier's: a peer died, a frame of the wrong size) or the kernels'.
  void checkPeers() const override;
  void announceFailure(const std::string& reason) override;
  DeviceChannels* deviceChannels() override { return this; }
  DomainUsage usage() const override;

  // DeviceChannels.
  int device() const override { return device_; }
  bool kernelsConcurrent() const override { return kernelsConcurrent_; }
  bool sharedAddressSpace() const override { return false; }
  const std::vector<device::PeerChannels>& hostTable() const override { return table_; }
  const device::PeerChannels* deviceTable() const override { return deviceTable_; }
  device::DeviceStatus* deviceStatus() const override {
    return reinterpret_cast<device::DeviceStatus*>(status_.device);
  }
  const volatile device::DeviceStatus* hostStatus() const override {
    return reinterpret_cast<const volatile device::DeviceStatus*>(status_.host);
  }
  unsigned long long* laneBarrier() const override { return laneBarrier_; }
  void* scratch() const override { return scratch_; }
  void requestAbort() override;
  void beginCall(const CallShape& call) override;
  collResult_t pollError(int rank, std::string* message) const override;
  void drain(Deadline deadline) override;
  bool adoptPeers(const DeviceChannels& other, const std::vector<int>& ranks) override;

  const StagingLayout& layout() const { return layout_; }

 private:
  struct Regions {
    MappedBlock send;  // this rank's kernels -> the peer
    MappedBlock recv;  // the peer -> this rank's kernels
    // Copy-then-reduce (COLL_STAGED_RECV=copy): the received slots' copies in device memory.
    void* deviceSlots = nullptr;
  };
  void allocate();
  void release() noexcept;
  void decideConcurrency(const std::vector<StagedCard>& cards);
  void uploadTable();
  void startProxy();

  int rank_;
  int nranks_;
  int device_;
  const std::vector<PeerInfo>& peers_;
  const TransportSettings& settings_;
  std::vector<int> members_;
  std::function<void(const std::vector<int>&)> setupWatch_;
  std::unique_ptr<StagingMemory> memory_;
  StagingLayout layout_;
  size_t frameBytes_;
  std::vector<std::unique_ptr<Domain>> carriers_;  // in table order, as on every rank
  std::vector<Domain*> carrierOf_;                 // per rank: the carrier that reaches it, or null
  std::vector<Regions> regions_;                   // per rank (staged peers only)
  // Copy-then-reduce: the copy engine's queue that fills every peer's device slots (one stream, so
  // that the proxy adds one stream, not one per peer, to those sharing the GPU's hardware queues).
  std::unique_ptr<SlotUploader> uploader_;
  void* selfRegion_ = nullptr;                     // device memory, when this rank stages to itself
  MappedBlock status_;
  unsigned long long* laneBarrier_ = nullptr;
  void* scratch_ = nullptr;
  std::vector<device::PeerChannels> table_;  // per rank, the kernels' view
  device::PeerChannels* deviceTable_ = nullptr;
  bool kernelsConcurrent_ = true;
  Doorbell ownBell_;
  std::unique_ptr<StagingProxy> proxy_;
};

// The staged domain over the device's memory (settings->device); collInvalidUsage without CUDA.
std::unique_ptr<Domain> makeStagedDomain(const DomainArgs& args);

}  // namespace transport
}  // namespace coll
