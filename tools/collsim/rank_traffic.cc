#include "tools/collsim/rank_traffic.h"

#include <algorithm>
#include <set>

#include "common/error.h"

namespace collsim {
namespace {

// Traffic per peer, indexed by rank (schedules name up to n-1 peers: pairwise, direct).
class PeerTable {
 public:
  explicit PeerTable(int nranks) : slot_(static_cast<size_t>(nranks), -1) {}
  void add(int peer, uint64_t slices, uint64_t bytes) {
    int& at = slot_[static_cast<size_t>(peer)];
    if (at < 0) at = static_cast<int>(list_.size()), list_.push_back({peer, 0, 0});
    list_[static_cast<size_t>(at)].slices += slices;
    list_[static_cast<size_t>(at)].bytes += bytes;
  }
  std::vector<PeerTraffic> sorted() {
    std::sort(list_.begin(), list_.end(), [](const PeerTraffic& a, const PeerTraffic& b) { return a.peer < b.peer; });
    return std::move(list_);
  }

 private:
  std::vector<int> slot_;
  std::vector<PeerTraffic> list_;
};

const PeerTraffic* findPeer(const std::vector<PeerTraffic>& list, int peer) {
  auto it = std::lower_bound(list.begin(), list.end(), peer, [](const PeerTraffic& t, int p) { return t.peer < p; });
  return it != list.end() && it->peer == peer ? &*it : nullptr;
}

}  // namespace

std::string connectionMismatch(const RankTraffic& from, const RankTraffic& to) {
  const PeerTraffic* sent = findPeer(from.sends, to.rank);
  const PeerTraffic* received = findPeer(to.recvs, from.rank);
  if (sent == nullptr && received == nullptr) return "";
  if (sent != nullptr && received != nullptr && sent->slices == received->slices && sent->bytes == received->bytes)
    return "";
  auto count = [](const PeerTraffic* t, bool bytes) {
    return static_cast<unsigned long long>(t == nullptr ? 0 : bytes ? t->bytes : t->slices);
  };
  return coll::formatString(
      "rank %d -> %d: sends %llu slices (%llu bytes), the receiver takes %llu slices (%llu bytes)", from.rank, to.rank,
      count(sent, false), count(sent, true), count(received, false), count(received, true));
}

int RankTraffic::distinctPeers() const {
  std::set<int> peers;
  for (const PeerTraffic& t : sends) peers.insert(t.peer);
  for (const PeerTraffic& t : recvs) peers.insert(t.peer);
  return static_cast<int>(peers.size());
}

RankTraffic walkSchedule(int rank, int nranks, const coll::Schedule& schedule, size_t elemSize, size_t slotBytes) {
  RankTraffic traffic;
  traffic.rank = rank;
  traffic.steps = schedule.steps.size();
  PeerTable sends(nranks), recvs(nranks);
  const uint64_t sliceElems = std::max<size_t>(1, slotBytes / elemSize);
  for (const coll::Step& step : schedule.steps) {
    if (step.count == 0) continue;  // the executor skips it on both ends
    const uint64_t slices = (step.count + sliceElems - 1) / sliceElems;
    const uint64_t bytes = step.count * elemSize;
    for (int i = 0; i < step.nsend; ++i) sends.add(step.sendPeers[i], slices, bytes);
    for (int i = 0; i < step.nrecv; ++i) recvs.add(step.recvPeers[i], slices, bytes);
    traffic.messagesSent += slices * static_cast<uint64_t>(step.nsend);
    traffic.bytesSent += bytes * static_cast<uint64_t>(step.nsend);
  }
  traffic.sends = sends.sorted();
  traffic.recvs = recvs.sorted();
  return traffic;
}

Holdings lazyHoldings(const std::vector<const RankTraffic*>& plans, const JobShape& shape,
                      const TransportShape& transports) {
  std::set<int> sendPeers, recvPeers;
  int rank = -1;
  for (const RankTraffic* t : plans) {
    rank = t->rank;
    for (const PeerTraffic& p : t->sends) sendPeers.insert(p.peer);
    for (const PeerTraffic& p : t->recvs) recvPeers.insert(p.peer);
  }
  Holdings h;
  std::set<int> all(sendPeers), net;
  all.insert(recvPeers.begin(), recvPeers.end());
  for (int peer : all)
    if (!shape.sameHost(rank, peer)) net.insert(peer);
  for (int peer : recvPeers) (shape.sameHost(rank, peer) ? h.shmFifos : h.netFifos) += 1;
  for (int peer : sendPeers) h.netFifos += shape.sameHost(rank, peer) ? 0 : 1;
  h.peers = static_cast<int>(all.size());
  h.netPeers = static_cast<int>(net.size());
  h.sockets = h.netPeers * transports.socketsPerPeer;
  h.fifoBytes = transports.slotBytes * (static_cast<uint64_t>(h.shmFifos) * transports.shmFifoDepth +
                                        static_cast<uint64_t>(h.netFifos) * transports.netFifoDepth);
  return h;
}

Holdings eagerHoldings(const JobShape& shape, const TransportShape& transports) {
  Holdings h;
  const int local = shape.ranksPerHost() - 1, remote = shape.nranks - shape.ranksPerHost();
  h.peers = local + remote;
  h.netPeers = remote;
  h.shmFifos = local;
  h.netFifos = 2 * remote;
  h.sockets = remote * transports.socketsPerPeer;
  h.fifoBytes = transports.slotBytes * (static_cast<uint64_t>(h.shmFifos) * transports.shmFifoDepth +
                                        static_cast<uint64_t>(h.netFifos) * transports.netFifoDepth);
  return h;
}

}  // namespace collsim
