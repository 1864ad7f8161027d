// This rank's view of one peer's P2P memory: the peer's allocation mapped here (by pointer for a
// thread of this process, since CUDA refuses to open a handle in the process that made it; with
// cudaIpcOpenMemHandle for another process, after enabling peer access to another GPU), and the
// channels between the two (kernels/cuda/channel_layout.h): where this rank reads what the peer
// sends, in its own allocation, and where it writes what it sends, in the peer's.
#pragma once

#include "kernels/cuda/channel_layout.h"
#include "transport/p2p/p2p_card.h"

namespace coll {
namespace transport {

class P2pConnection {
 public:
  // Maps `peer`'s allocation on `device` (the current device); `sameGpu`: the peer runs on this
  // rank's GPU (same_gpu.h). Throws collInvalidUsage when this GPU cannot reach the peer's.
  P2pConnection(const P2pCard& peer, bool sameGpu, int device, int myRank, char* myRegions);
  ~P2pConnection();
  P2pConnection(const P2pConnection&) = delete;
  P2pConnection& operator=(const P2pConnection&) = delete;

  device::PeerChannels channels() const { return channels_; }

 private:
  char* peerBase_ = nullptr;
  bool openedByIpc_ = false;
  device::PeerChannels channels_{};
};

}  // namespace transport
}  // namespace coll
