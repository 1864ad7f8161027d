// The bootstrap all-gather between the ranks themselves, so that init costs O(log n) messages per
// rank instead of n store requests each (n^2 on the store's one thread).
//
// Each rank listens on a TCP socket at the address it reaches the store from, and publishes only
// that address (and a random token) in the store. allGather() is Bruck's algorithm: in round k
// (distance d = 2^k, while d < n) rank r sends the min(d, n - d) records it holds, those of ranks
// r .. r+d-1, to rank r-d, and receives those of ranks r+d .. from rank r+d; after ceil(log2 n)
// rounds it holds every record. So a rank dials ceil(log2 n) peers, reads as many addresses from
// the store, and is dialled by as many: the store sees O(log n) requests per rank. The links
// (rank_link.h: the store's challenge-response, then the records) stay open for the
// communicator's later all-gathers (transport setup rounds, split); the listener closes once every
// expected peer has dialled in.
//
// Failures: a link that closes, or a wait that passes half a second, looks for the departure
// notice in the store (bootstrap_ops.h) and throws collRemoteError naming the rank that left; the
// deadline gives collTimeout naming the rank waited for. Connections to the listener that fail the
// handshake are dropped with a warning, and the exchange goes on; the listener applies the rules
// of every listener to connections not yet proven (common/listener_gate.h: a hello deadline,
// bounded room that the longest-silent connection gives up, rate-limited warnings).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/rank_link.h"
#include "bootstrap/store.h"
#include "common/fd.h"
#include "common/listener_gate.h"

namespace coll {
namespace bootstrap {

class RankExchange {
 public:
  // Whether the ranks of `store` can exchange directly: it is a TCP store (ranks in process memory
  // share a MemoryStore, where the store's all-gather costs no network).
  static bool usableWith(const Store& store) { return !store.localAddress().empty(); }

  // Listens and publishes this rank's address in `store` (whose keys must be private to the
  // communicator). Does not wait for anyone.
  RankExchange(std::shared_ptr<Store> store, int rank, int nranks);
  ~RankExchange();
  RankExchange(const RankExchange&) = delete;
  RankExchange& operator=(const RankExchange&) = delete;

  // Every rank contributes `mine`; returns all contributions indexed by rank. Collective: every
  // rank calls with the same tag, in the same order (the tag is checked on the wire). Records may
  // differ in size. Throws as the header says.
  std::vector<Bytes> allGather(const std::string& tag, const Bytes& mine, Deadline deadline);

  // "10.0.0.1:41234", for logs; "" once closed.
  const std::string& listenAddress() const { return address_; }

 private:
  int peerAt(int distance) const { return ((rank_ + distance) % nranks_ + nranks_) % nranks_; }
  bool expectsInbound(int rank) const;
  void dialPeers(Deadline deadline);
  // Polls every link and the listener until `done()` or the deadline; `wanted` is the accepted
  // link whose records the caller waits for (-1: none).
  template <class Done>
  void pump(Done done, int wantedFrom, const std::string& during, Deadline deadline);
  void acceptPending();
  // Closes an accepted or dialled link for good (its slot in links_ becomes null).
  void forgetLink(size_t index);
  static ListenerGate::Key keyOf(const RankLink& link);
  void serviceLink(size_t index, short revents, const std::string& during, Deadline deadline);
  std::vector<Bytes> gatherRounds(const std::string& tag, const Bytes& mine, Deadline deadline);
  // A link to `peer` closed; `handshakeDone` says whether it had been proven (a listener may close
  // an unproven connection to make room, which is no failure of its rank).
  [[noreturn]] void lostPeer(int peer, const std::string& during, Deadline deadline, bool handshakeDone = true);
  RankLink* inboundFrom(int peer);
  RankLink* outboundTo(int peer);

  std::shared_ptr<Store> store_;
  int rank_;
  int nranks_;
  LinkContext ctx_;
  Fd listener_;
  std::unique_ptr<ListenerGate> gate_;  // the listener's rules for connections not yet proven
  // The gate's Drop: an unproven accepted link, closed at once.
  const ListenerGate::Drop dropUnproven_ = [this](ListenerGate::Key key, const std::string&) {
    for (auto& link : links_)
      if (link && keyOf(*link) == key) link.reset();
  };
  std::string address_;
  bool dialled_ = false;
  std::vector<std::unique_ptr<RankLink>> links_;
  std::string broken_;  // why an earlier exchange failed
  std::mutex mutex_;    // one all-gather at a time
};

}  // namespace bootstrap
}  // namespace coll
