// The transport-domain interface: what every transport implements. A domain is one transport's
// share of one communicator on one rank: it is set up with the other ranks, hands out the
// connections to the peers the communicator routes through it, watches their health, tells them
// when this rank fails, and moves bytes when someone has to (sockets).
//
// The communicator never names a transport. It asks the transport table (transport_table.h)
// which transport routes to each peer, creates a domain for every transport some pair of ranks
// uses, runs the setup below on every rank, and from then on reaches peers through routes.
//
// Setup is collective over every rank of the communicator, and runs in rounds:
//
//   for round in 0 .. setupRounds()-1:   cards = all-gather(card(round)); connect(round, cards)
//   barrier; setupDone()
//
// A rank with no peer in a domain takes part all the same (its card may be empty). A transport
// whose card depends on what it learned from the others uses more rounds: shared memory first
// agrees whether the ranks may read each other's memory, then publishes segments made for the
// answer. The number of rounds must not differ between ranks.
//
// Setup exchanges what every rank must know about the others (cards, mapped segments) but opens
// no connection: connections are made lazily, to the peers some plan actually uses, so that what
// a rank holds (sockets, FIFO memory) grows with the schedules' peers (2 for a ring, O(log n) for
// a tree), not with the number of ranks. The contract of that lazy setup:
//
//   - sendConnection(peer)/recvConnection(peer) are first called when a plan first needs that
//     peer: from the executor, per step, possibly inside a collective (src/exec/executor.cc). They
//     return at once and never wait for the peer to act: in a ring every rank asks for its send
//     connection before its receive connection, so a call that waited for the other end would
//     deadlock. Where a handshake needs both ends, the domain completes it in the background (the
//     progress driver, or the peer's own first call) and decides deterministically which end does
//     what when both ask at the same moment.
//   - A connection that is not usable yet says "nothing yet": tryAcquire() and tryPeek() return
//     nullptr until it is. The executor's waits, timeouts and health checks already handle that.
//   - A peer that dies before its connection is complete is still reported by checkPeers() (or
//     the executor's timeout) on every survivor that waits for it: an error, never a hang.
//   - usage() says what the domain holds and to whom; the communicator logs it (INFO) when it is
//     destroyed, so that the growth with the schedule's peers can be shown and tested.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "transport/doorbell.h"
#include "transport/peer_info.h"
#include "transport/transport.h"
#include "transport/transport_settings.h"

namespace coll {
namespace transport {

class LocalMemory;
class DeviceChannels;

// The memory a transport's connections carry. Host memory moves through slot FIFOs that the
// host executor drives (transport.h); device memory through channels in GPU memory that the
// device kernels drive (device_channels.h).
enum class MemoryKind { kHost, kDevice };

// What a domain is made from.
struct DomainArgs {
  int rank = 0;
  int nranks = 1;
  const std::vector<PeerInfo>* peers = nullptr;  // every rank's description, indexed by rank
  std::vector<int> members;                      // the ranks this rank reaches through the domain, ascending
  const TransportSettings* settings = nullptr;   // outlives the domain
  // Throws CollError when one of the `awaited` ranks left the job (its store connection closed),
  // so that a connection waiting for that rank's dial stops waiting. A domain calls it about twice
  // a second while connections wait, so that a dead peer costs its survivors seconds, not the
  // timeout. Only the awaited ranks count: a rank that finished and destroyed its communicator
  // has left the store too, and must not fail the others' later connections. Empty: no check.
  std::function<void(const std::vector<int>& awaited)> setupWatch;
};

// What a domain holds: see Domain::usage().
struct DomainUsage {
  std::vector<int> sendPeers;  // ascending: the peers this rank made a send connection to
  std::vector<int> recvPeers;  // ascending: the peers this rank made a receive connection from
  int resources = 0;           // what those connections cost, in `resourceKind`
  const char* resourceKind = "connections";
  // What else the domain did that logs and tests want to see, by name ("zero-copy writes", 12).
  std::vector<std::pair<std::string, uint64_t>> counts;
};

// The count of slices received straight into the caller's memory, with no staging copy (a socket
// frame read into place, a single-copy read from a local peer; transport.h, offerLanding).
constexpr const char* kReceivedInPlace = "slices received in place";
// The count of reads straight from a local sender's buffer (single copies, cross-memory attach),
// into place or into the slot.
constexpr const char* kSingleCopyReads = "single-copy reads";

// "shm: 2 FIFOs; sends to 1, receives from 3" for logs.
std::string describeUsage(const char* domainName, const DomainUsage& usage);

class Domain {
 public:
  virtual ~Domain() = default;
  virtual const char* name() const = 0;

  // Setup (above). card() and connect() throw CollError: collRemoteError for a malformed card,
  // collTimeout when a peer does not connect before the deadline, collInvalidUsage for peers
  // that cannot work together (settings or builds that differ).
  virtual int setupRounds() const { return 1; }
  virtual std::string card(int round) = 0;
  virtual void connect(int round, const std::vector<std::string>& cards, Deadline deadline) = 0;
  // After every rank connected: drop what only setup needed (a segment's name, a listener).
  virtual void setupDone() {}

  // Host memory: the connections to `peer`, one of the domain's members, made at the first call
  // for that peer (the lazy contract above: never blocks, may be unusable for a while).
  virtual SendConnection* sendConnection(int peer) = 0;
  virtual RecvConnection* recvConnection(int peer) = 0;
  // Slots per host FIFO (0: no host FIFOs). A pipelined step uses at most half of the shallowest
  // FIFO of any route, so the planner needs it (src/algorithms/ring.cc says why).
  virtual int fifoDepth() const { return 0; }

  // Health: throws CollError(collRemoteError) naming a member that failed, exited or broke its
  // connection. Called while a rank waits, at most about once a millisecond.
  virtual void checkPeers() const = 0;
  // This rank failed (an error, or collCommAbort): tell the members at once, so that they stop
  // waiting for it instead of timing out.
  virtual void announceFailure(const std::string& reason) = 0;
  // For a timeout's message, called once when a wait of this rank's collective number
  // `collective` (from 1) times out: the members that, as far as this domain can see, have not
  // begun that collective, or have begun it and not waited on anything for `quietNs` (stopped or
  // stuck), named with why; "" when it sees none (the default: it cannot tell).
  virtual std::string describeStall(uint64_t collective, int64_t quietNs) const {
    (void)collective;
    (void)quietNs;
    return "";
  }

  // Progress: a transport whose bytes someone must move (sockets) returns its driver; the
  // executor pumps it while it waits and hands it back while it sleeps.
  virtual ProgressDriver* progressDriver() { return nullptr; }

  // The rank's doorbell. A domain whose members ring this rank from other processes keeps it in
  // memory they share (shared memory) and offers it here; the communicator then gives that one
  // to every domain with useDoorbell(), or a doorbell in process memory when none offers one.
  // Called before setup.
  virtual Doorbell* sharedDoorbell() { return nullptr; }
  virtual void useDoorbell(Doorbell* bell) { (void)bell; }

  // Capabilities beyond connections, for the native algorithms and the device engine.
  virtual LocalMemory* localMemory() { return nullptr; }
  virtual DeviceChannels* deviceChannels() { return nullptr; }

  // For colltopo and messages: where this rank can be reached in this domain ("" for nowhere).
  virtual std::string address() const { return ""; }

  // What the domain holds so far (for logs and tests): the peers it made connections to, and the
  // resources those cost ("FIFOs", "sockets"). Safe to call while the executor runs.
  virtual DomainUsage usage() const { return {}; }
};

}  // namespace transport
}  // namespace coll
