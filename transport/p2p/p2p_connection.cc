#include "transport/p2p/p2p_connection.h"

#include <cuda_runtime.h>

#include "common/cuda_check.h"
#include "common/cuda_device.h"
#include "common/error.h"

namespace coll {
namespace transport {

namespace {

// Peer access from `device` to the peer's GPU, found by its bus id: the peer's ordinal is its own
// process's numbering. A GPU this process does not see (CUDA_VISIBLE_DEVICES) cannot be asked
// about here; the device islands found that the two reach each other, and cudaIpcOpenMemHandle
// enables the access it needs itself (cudaIpcMemLazyEnablePeerAccess).
void enablePeerAccess(const P2pCard& peer, int device, int myRank) {
  // Without a bus id (CUDA gave none), the peer's ordinal is all there is.
  const int peerDevice = peer.busId[0] != '\0' ? cudaDeviceOfBusId(peer.busId) : peer.device;
  if (peerDevice < 0) {
    if (peer.process == p2pProcessIdentity())
      throwError(collInternalError, "P2P setup: rank %d's GPU (%s) is not visible to its own process", peer.rank,
                 peer.busId);
    return;
  }
  int canAccess = 0;
  COLL_CUDACHECK(cudaDeviceCanAccessPeer(&canAccess, device, peerDevice));
  if (!canAccess)
    throwError(collInvalidUsage,
               "P2P setup: GPU %d (rank %d) cannot access GPU %d, bus id %s (rank %d): no peer access", device, myRank,
               peerDevice, peer.busId[0] != '\0' ? peer.busId : "unknown", peer.rank);
  const cudaError_t rc = cudaDeviceEnablePeerAccess(peerDevice, 0);
  if (rc != cudaSuccess && rc != cudaErrorPeerAccessAlreadyEnabled) COLL_CUDACHECK(rc);
  cudaGetLastError();  // "already enabled" is not an error here
}

}  // namespace

P2pConnection::P2pConnection(const P2pCard& peer, bool sameGpu, int device, int myRank, char* myRegions) {
  if (!sameGpu) enablePeerAccess(peer, device, myRank);
  if (peer.process == p2pProcessIdentity()) {
    peerBase_ = reinterpret_cast<char*>(peer.base);
  } else {
    void* mapped = nullptr;
    COLL_CUDACHECK(cudaIpcOpenMemHandle(&mapped, peer.handle, cudaIpcMemLazyEnablePeerAccess));
    peerBase_ = static_cast<char*>(mapped);
    openedByIpc_ = true;
  }
  // The peer's region for data from this rank is the myRank-th of its allocation.
  const size_t region = device::connectionBytes();
  channels_ = device::regionChannels(myRegions + region * static_cast<size_t>(peer.rank),
                                     peerBase_ + region * static_cast<size_t>(myRank));
}

P2pConnection::~P2pConnection() {
  // Errors are ignored: this runs on teardown and after failures, when the device may be gone.
  if (openedByIpc_ && peerBase_ != nullptr) cudaIpcCloseMemHandle(peerBase_);
}

}  // namespace transport
}  // namespace coll
