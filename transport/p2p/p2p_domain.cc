#include "transport/p2p/p2p_domain.h"

#include <cuda_runtime.h>

#include <cstring>
#include <map>
#include <random>

#include "common/cuda_check.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/logging.h"
#include "kernels/cuda/launch.h"

namespace coll {
namespace transport {
namespace {

constexpr uint32_t kLocatorMagic = 0x70327031;  // "p2p1"

// What a rank tells its peers. Fixed size, so a peer's blob of any other size is refused.
struct Locator {
  uint32_t magic;
  int32_t rank;
  int32_t nranks;
  int32_t device;
  uint64_t layoutDigest;  // the channel layout of this build: equal on every rank or nothing fits
  uint64_t process;       // random per process: equal means "a thread of the same process"
  uint64_t base;          // the allocation's address, valid in that process only
  uint64_t regionBytes;
  int32_t residentBlocks;  // blocks of the schedule kernels the rank's GPU holds at once
  int32_t reserved;
  cudaIpcMemHandle_t handle;
};

uint64_t processIdentity() {
  static const uint64_t identity = [] {
    std::random_device random;
    return (uint64_t(random()) << 32) ^ random();
  }();
  return identity;
}

uint64_t layoutDigest() {
  Fnv1a h;
  for (device::ChannelGeometry g : {device::kLLGeometry, device::kSimpleGeometry})
    h.add(uint64_t(g.protocol)).add(uint64_t(g.lanes)).add(uint64_t(g.slotBytes)).add(uint64_t(g.depth));
  return h.add(uint64_t(device::connectionBytes())).value();
}

Locator parseLocator(const std::vector<uint8_t>& blob, int expectedRank, int nranks) {
  Locator l;
  if (blob.size() != sizeof(Locator))
    throwError(collInvalidUsage, "P2P setup: rank %d sent a %zu-byte locator, expected %zu", expectedRank, blob.size(),
               sizeof(Locator));
  memcpy(&l, blob.data(), sizeof l);
  if (l.magic != kLocatorMagic || l.rank != expectedRank || l.nranks != nranks)
    throwError(collInvalidUsage, "P2P setup: rank %d sent a locator that is not one (magic, rank or size differ)",
               expectedRank);
  if (l.layoutDigest != layoutDigest() || l.regionBytes != device::connectionBytes())
    throwError(collInvalidUsage, "P2P setup: rank %d uses another channel layout (a different build of libcollective?)",
               expectedRank);
  return l;
}

}  // namespace

P2pDomain::P2pDomain(int rank, int nranks, int device) : rank_(rank), nranks_(nranks), device_(device) {
  try {
    COLL_CUDACHECK(cudaSetDevice(device));
    const size_t bytes = device::connectionBytes() * static_cast<size_t>(nranks);
    COLL_CUDACHECK(cudaMalloc(reinterpret_cast<void**>(&regions_), bytes));
    COLL_CUDACHECK(cudaMemset(regions_, 0, bytes));  // every slot free, every line unwritten
    COLL_CUDACHECK(
        cudaHostAlloc(reinterpret_cast<void**>(&hostStatus_), sizeof(device::DeviceStatus), cudaHostAllocMapped));
    memset(hostStatus_, 0, sizeof(device::DeviceStatus));
    COLL_CUDACHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&deviceStatus_), hostStatus_, 0));
    COLL_CUDACHECK(cudaMalloc(reinterpret_cast<void**>(&laneBarrier_), sizeof(unsigned long long)));
    COLL_CUDACHECK(cudaMemset(laneBarrier_, 0, sizeof(unsigned long long)));
    COLL_CUDACHECK(cudaMalloc(&scratch_, 16));
    COLL_CUDACHECK(cudaMemset(scratch_, 0, 16));
    COLL_CUDACHECK(cudaDeviceSynchronize());
  } catch (...) {
    release();
    throw;
  }
}

P2pDomain::~P2pDomain() { release(); }

void P2pDomain::release() noexcept {
  // Errors are ignored: this runs on teardown and after failures, when the device may be gone.
  for (size_t r = 0; r < peerBases_.size(); ++r)
    if (openedByIpc_[r] && peerBases_[r] != nullptr) cudaIpcCloseMemHandle(peerBases_[r]);
  peerBases_.clear();
  openedByIpc_.clear();
  if (deviceTable_ != nullptr) cudaFree(deviceTable_);
  if (regions_ != nullptr) cudaFree(regions_);
  if (laneBarrier_ != nullptr) cudaFree(laneBarrier_);
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (hostStatus_ != nullptr) cudaFreeHost(hostStatus_);
  deviceTable_ = nullptr;
  regions_ = nullptr;
  laneBarrier_ = nullptr;
  scratch_ = nullptr;
  hostStatus_ = nullptr;
  deviceStatus_ = nullptr;
}

std::vector<uint8_t> P2pDomain::locator() const {
  Locator l;
  memset(&l, 0, sizeof l);
  l.magic = kLocatorMagic;
  l.rank = rank_;
  l.nranks = nranks_;
  l.device = device_;
  l.layoutDigest = layoutDigest();
  l.process = processIdentity();
  l.base = reinterpret_cast<uintptr_t>(regions_);
  l.regionBytes = device::connectionBytes();
  int sms = 0;
  COLL_CUDACHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_));
  l.residentBlocks = sms * device::scheduleKernelBlocksPerSm();
  COLL_CUDACHECK(cudaIpcGetMemHandle(&l.handle, regions_));
  std::vector<uint8_t> blob(sizeof l);
  memcpy(blob.data(), &l, sizeof l);
  return blob;
}

void P2pDomain::connect(const std::vector<std::vector<uint8_t>>& locators) {
  if (static_cast<int>(locators.size()) != nranks_)
    throwError(collInternalError, "P2P setup: %zu locators for %d ranks", locators.size(), nranks_);
  COLL_CUDACHECK(cudaSetDevice(device_));
  peerBases_.assign(nranks_, nullptr);
  openedByIpc_.assign(nranks_, false);
  // Kernels run at the same time when each GPU serves one process (different GPUs run on their
  // own, a process's streams share its context; two processes on one GPU time-slice) and holds
  // every lane of every rank on it at once. Every rank decides from the same locators, so all
  // agree on the mode (and with it the protocol).
  struct DeviceUse {
    uint64_t process;
    int ranks;
    int residentBlocks;
  };
  std::map<int, DeviceUse> devices;
  kernelsConcurrent_ = true;
  for (int r = 0; r < nranks_; ++r) {
    const Locator peer = parseLocator(locators[r], r, nranks_);
    auto [entry, fresh] = devices.emplace(peer.device, DeviceUse{peer.process, 0, peer.residentBlocks});
    DeviceUse& use = entry->second;
    if (!fresh && use.process != peer.process) kernelsConcurrent_ = false;
    if (++use.ranks * static_cast<int>(device::kSimpleGeometry.lanes) > use.residentBlocks) kernelsConcurrent_ = false;
    if (peer.device != device_) {
      int canAccess = 0;
      COLL_CUDACHECK(cudaDeviceCanAccessPeer(&canAccess, device_, peer.device));
      if (!canAccess)
        throwError(collInvalidUsage, "P2P setup: GPU %d (rank %d) cannot access GPU %d (rank %d): no peer access",
                   device_, rank_, peer.device, r);
      const cudaError_t rc = cudaDeviceEnablePeerAccess(peer.device, 0);
      if (rc != cudaSuccess && rc != cudaErrorPeerAccessAlreadyEnabled) COLL_CUDACHECK(rc);
      cudaGetLastError();  // "already enabled" is not an error here
    }
    if (peer.process == processIdentity()) {
      peerBases_[r] = reinterpret_cast<char*>(peer.base);
    } else {
      void* mapped = nullptr;
      COLL_CUDACHECK(cudaIpcOpenMemHandle(&mapped, peer.handle, cudaIpcMemLazyEnablePeerAccess));
      peerBases_[r] = static_cast<char*>(mapped);
      openedByIpc_[r] = true;
    }
  }
  // Rank r's region for data from this rank is the rank_-th of its allocation.
  table_.assign(nranks_, device::PeerChannels{nullptr, nullptr});
  const size_t region = device::connectionBytes();
  for (int r = 0; r < nranks_; ++r) {
    table_[r].recv = regions_ + region * static_cast<size_t>(r);
    table_[r].send = peerBases_[r] + region * static_cast<size_t>(rank_);
  }
  COLL_CUDACHECK(cudaMalloc(reinterpret_cast<void**>(&deviceTable_), sizeof(device::PeerChannels) * nranks_));
  COLL_CUDACHECK(
      cudaMemcpy(deviceTable_, table_.data(), sizeof(device::PeerChannels) * nranks_, cudaMemcpyHostToDevice));
  COLL_INFO(kTransport, "P2P: rank %d on GPU %d connected to %d ranks (%s kernels)", rank_, device_, nranks_,
            kernelsConcurrent_ ? "concurrent" : "serialized");
}

void P2pDomain::requestAbort() {
  if (hostStatus_ != nullptr) reinterpret_cast<volatile uint32_t*>(&hostStatus_->abort)[0] = 1;
}

}  // namespace transport
}  // namespace coll
