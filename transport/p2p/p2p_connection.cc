#include "transport/p2p/p2p_connection.h"

#include <cuda_runtime.h>

#include "common/cuda_check.h"
#include "common/error.h"

namespace coll {
namespace transport {

P2pConnection::P2pConnection(const P2pCard& peer, int device, int myRank, char* myRegions) {
  if (peer.device != device) {
    int canAccess = 0;
    COLL_CUDACHECK(cudaDeviceCanAccessPeer(&canAccess, device, peer.device));
    if (!canAccess)
      throwError(collInvalidUsage, "P2P setup: GPU %d (rank %d) cannot access GPU %d (rank %d): no peer access", device,
                 myRank, peer.device, peer.rank);
    const cudaError_t rc = cudaDeviceEnablePeerAccess(peer.device, 0);
    if (rc != cudaSuccess && rc != cudaErrorPeerAccessAlreadyEnabled) COLL_CUDACHECK(rc);
    cudaGetLastError();  // "already enabled" is not an error here
  }
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
  channels_.recv = myRegions + region * static_cast<size_t>(peer.rank);
  channels_.send = peerBase_ + region * static_cast<size_t>(myRank);
}

P2pConnection::~P2pConnection() {
  // Errors are ignored: this runs on teardown and after failures, when the device may be gone.
  if (openedByIpc_ && peerBase_ != nullptr) cudaIpcCloseMemHandle(peerBase_);
}

}  // namespace transport
}  // namespace coll
