// The socket transport of one communicator rank: TCP connections to the ranks that the transport
// table gives to "net" (ranks on other hosts, or every rank when shared memory is switched off),
// a FIFO of slots per direction and peer (net_channel.h), and one progress thread that moves
// bytes whenever the executor is not doing it itself: while a collective runs, the executor pumps
// the sockets from its wait loop (no thread switch on the critical path); when it goes to sleep,
// or returns with sends still queued, the thread takes over.
//
// Setup takes two phases, like every transport: listen() gives a card (address, port, random
// nonce) that the bootstrap publishes; connectPeers() then opens S sockets per peer pair (the
// higher rank connects, presenting the lower rank's nonce) and starts the progress thread.
//
// Failure: a connection that breaks or carries a malformed frame marks the domain failed with a
// message naming the peer; the executor's health check throws it, and ringing the doorbell wakes
// a sleeping executor at once. A rank that fails shuts its sockets down, so its peers see the
// connection close and fail in turn: every rank learns within a round trip, not at the timeout.
// A rank that destroys its communicator normally sends a closing frame first, so that its exit
// is not taken for a failure.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/socket.h"
#include "transport/doorbell.h"
#include "transport/net/net_channel.h"

namespace coll {
namespace transport {

struct NetConfig {
  int depth = 8;                 // slots per direction and peer
  size_t slotBytes = 128 << 10;  // bytes per slot; equal to the shared-memory slots (the executor needs one size)
  int socketsPerPeer = 2;        // COLL_SOCKET_NSOCKS
  int timeoutMs = 300000;        // bounds the flush of pending sends at destruction
};

class NetDomain : public NetChannelOwner, public ProgressDriver {
 public:
  NetDomain(const NetConfig& config, int myRank, int nranks, Doorbell* bell);
  ~NetDomain() override;
  NetDomain(const NetDomain&) = delete;
  NetDomain& operator=(const NetDomain&) = delete;

  // Phase 1: listens on `host` (a numeric address) and returns this rank's card for the store.
  std::string listen(const std::string& host);
  // Phase 2: opens the sockets to every rank in `peers`; cards holds every rank's card (indexed by
  // rank; only those of `peers` are read). Throws collTimeout when a peer does not connect before
  // the deadline, collRemoteError for a malformed card.
  void connectPeers(const std::vector<std::string>& cards, const std::vector<int>& peers, Deadline deadline);

  SendConnection* sendConnection(int peer);
  RecvConnection* recvConnection(int peer);
  bool connects(int peer) const {
    return peer >= 0 && peer < static_cast<int>(peerIndex_.size()) && peerIndex_[peer] >= 0;
  }
  // "10.0.0.2:41235": where a peer listens, for messages and colltopo.
  std::string peerAddress(int peer) const;
  const std::string& listenAddress() const { return listenAddress_; }

  // Throws CollError(collRemoteError) when a connection broke.
  void checkPeers() const;
  // Shuts every socket down so that the peers notice this rank failed.
  void announceFailure();

  void wakeProgress() override;
  void channelFailed(int peer, const std::string& reason) override;

  // ProgressDriver: while the executor drives, the progress thread leaves the sockets alone and
  // waits to be handed them back; every thread switch saved is latency saved.
  void progressOnce() override;
  void executorState(Executor state) override;

 private:
  struct Peer {
    int rank = -1;
    NetCard card;
    std::vector<Fd> sockets;
    std::unique_ptr<NetSendChannel> send;
    std::unique_ptr<NetRecvChannel> recv;
  };
  void acceptPeers(int expected, Deadline deadline);
  void startChannels();
  void progressLoop();
  bool pumpAll();
  void flushAndSayGoodbye();

  NetConfig config_;
  int myRank_;
  Doorbell* bell_;
  uint64_t nonce_[2] = {0, 0};
  Fd listener_;
  std::string listenAddress_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<int> peerIndex_;  // rank -> index in peers_, or -1
  Fd wakeFd_;                   // eventfd: wakes the progress thread from poll()
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> executorDriving_{false};
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  mutable std::mutex failureMutex_;
  std::string failure_;
  std::thread progress_;
};

}  // namespace transport
}  // namespace coll
