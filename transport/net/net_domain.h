// The socket transport of one communicator rank: TCP connections to the ranks the routes give to
// "net" (ranks on other hosts, or every other rank when shared memory is switched off), a FIFO
// of slots per direction and peer (net_connection.h), and one progress thread that moves bytes
// whenever the executor is not doing it itself: while a collective runs, the executor pumps the
// sockets from its wait loop (no thread switch on the critical path); when it goes to sleep, or
// returns with sends still queued, the thread takes over.
//
// Setup is one round (transport/domain.h): card() listens and publishes where (net_card.h);
// connect() only reads the members' cards. Sockets are opened when the executor first asks for a
// peer's connection (the lazy contract of domain.h), so a rank holds S sockets per peer its plans
// use, not per member: the higher rank of the pair dials S sockets (net_connector.h), presenting
// the lower rank's nonce, whichever end asked first; the lower one only accepts. Asking never
// blocks: the connections exist at once, slots can be posted, and bytes flow once the handshakes
// that the executor's waits and the progress thread pump have completed. A lower rank waiting for
// a dial from a rank that left the job learns it from the setup watch (the store's departure
// notice), which its health check consults while some connection is incomplete.
// The progress thread starts once the communicator hands over the rank's doorbell.
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

#include "common/fd.h"
#include "transport/domain.h"
#include "transport/net/net_card.h"
#include "transport/net/net_connection.h"
#include "transport/net/net_connector.h"

namespace coll {
namespace transport {

// Whether this kernel lets a socket fix its send and receive buffers at `bytes` each:
// net.core.wmem_max and rmem_max (/proc/sys) are at least that. The kernel clamps larger requests
// to them, and a fixed buffer, which turns off the kernel's autotuning for that socket, clamped to a
// stock maximum (208 KiB) would be smaller than what autotuning reaches (tcp_wmem's and tcp_rmem's
// maximum, MiBs). False where the files cannot be read.
bool kernelAllowsSocketBuffers(size_t bytes);

class NetDomain : public Domain, public NetConnectionOwner, public ProgressDriver {
 public:
  explicit NetDomain(const DomainArgs& args);
  ~NetDomain() override;
  NetDomain(const NetDomain&) = delete;
  NetDomain& operator=(const NetDomain&) = delete;
  const char* name() const override { return "net"; }

  // Setup: listens and returns this rank's card; then reads the members' cards (cards holds
  // every rank's card, indexed by rank). connect() throws collRemoteError for a malformed card.
  std::string card(int round) override;
  void connect(int round, const std::vector<std::string>& cards, Deadline deadline) override;
  // Starts the progress thread, which rings `bell` when it moved something.
  void useDoorbell(Doorbell* bell) override;

  SendConnection* sendConnection(int peer) override;
  RecvConnection* recvConnection(int peer) override;
  int fifoDepth() const override { return settings_.netFifoDepth; }
  bool connects(int peer) const {
    return peer >= 0 && peer < static_cast<int>(peerIndex_.size()) && peerIndex_[peer] >= 0;
  }
  // "10.0.0.2:41235": where a peer listens, for messages.
  std::string peerAddress(int peer) const;
  std::string address() const override { return listenAddress_; }

  // Throws CollError(collRemoteError) when a connection broke.
  void checkPeers() const override;
  // Shuts every socket down so that the peers notice this rank failed.
  void announceFailure(const std::string& reason) override;
  // The peers asked for (per direction) and the sockets connected so far.
  DomainUsage usage() const override;

  void wakeProgress() override;
  void channelFailed(int peer, const std::string& reason) override;

  // ProgressDriver: while the executor drives, the progress thread leaves the sockets alone and
  // waits to be handed them back; every thread switch saved is latency saved.
  ProgressDriver* progressDriver() override { return this; }
  void progressOnce() override;
  void executorState(Executor state) override;

 private:
  struct Peer {
    int rank = -1;
    NetCard card;
    std::vector<Fd> sockets;             // set by the connector, under connectorMutex_
    std::vector<RecordCiphers> ciphers;  // each socket's, until attached (COLL_NET_ENCRYPT)
    // Indices into `sockets` of those carrying our frames to the peer, and the peer's to us
    // (netSocketsCarrying): the send and receive connections hold these, in this order.
    std::vector<int> sendSockets;
    std::vector<int> recvSockets;
    int connected = 0;  // valid sockets
    std::unique_ptr<NetSendConnection> send;
    std::unique_ptr<NetRecvConnection> recv;
    std::atomic<bool> active{false};  // send and recv exist (made by activate())
    std::atomic<bool> sendAsked{false};
    std::atomic<bool> recvAsked{false};
  };
  // Makes the peer's connections (without sockets) and, if this rank dials it, queues the dial.
  void activate(Peer& peer);
  Peer& peerFor(int rank);
  // Runs the handshakes (queued dials, incoming connections) and hands completed sockets to
  // their connections. True when something completed.
  bool pumpConnector();
  // Pumps the active connections whose lock is free; true when bytes moved or a lock was busy.
  // With `events`, also says per socket what to poll it for, read under the same locks. The
  // handshakes are pumped too when some connection waits for its sockets, or with `always`.
  bool pumpAll(std::vector<short>* events = nullptr, bool always = false);
  void progressLoop();
  void flushAndSayGoodbye();

  int myRank_;
  const std::vector<PeerInfo>& peerInfo_;
  const TransportSettings& settings_;  // the communicator's; outlives the domain
  size_t bufferBytes_ = 0;             // each data socket's fixed buffers (0: autotuned)
  std::vector<int> members_;
  std::function<void(const std::vector<int>&)> setupWatch_;
  mutable std::atomic<int64_t> nextWatchNs_{0};
  Doorbell* bell_ = nullptr;
  uint64_t nonce_[2] = {0, 0};
  Digest256 connectionKey_{};  // what both ends of every connection prove (net_wire.h)
  Fd listener_;                // open for the domain's life: peers dial when they first need us
  std::string listenAddress_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<int> peerIndex_;  // rank -> index in peers_, or -1
  // The peers with connections, in the order they got them: written under activeMutex_, read
  // without a lock up to activeCount_ (the vector never grows past its first size).
  std::mutex activeMutex_;
  std::vector<Peer*> active_;
  std::atomic<size_t> activeCount_{0};
  std::atomic<int> unattached_{0};  // active peers whose sockets are not all connected yet
  std::vector<int> dialQueue_;      // under activeMutex_
  mutable std::mutex connectorMutex_;
  std::unique_ptr<NetConnector> connector_;
  std::atomic<bool> connectorBusy_{false};
  Fd wakeFd_;  // eventfd: wakes the progress thread from poll()
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> executorDriving_{false};
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  mutable std::mutex failureMutex_;
  std::string failure_;
  std::thread progress_;
};

std::unique_ptr<Domain> makeNetDomain(const DomainArgs& args);

}  // namespace transport
}  // namespace coll
