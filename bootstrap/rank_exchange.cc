#include "bootstrap/rank_exchange.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "bootstrap/bootstrap_ops.h"
#include "common/error.h"
#include "common/logging.h"
#include "common/random.h"
#include "common/socket.h"

namespace coll {
namespace bootstrap {

using wire::FrameReader;
using wire::FrameWriter;
using wire::Op;

namespace {

// How long a rank that saw a peer's link close waits for the notice that names who left first.
constexpr auto kDepartureNoticeGrace = std::chrono::milliseconds(2000);
// Connections to the listener still proving themselves, and how long each may take: the rules
// every listener applies (common/listener_gate.h). A peer dials only once it has every address it
// needs, and sends its hello at once, so its handshake is a few round trips of two ranks that are
// both in their exchange.
constexpr size_t kMaxHandshakingLinks = 64;
constexpr auto kHelloTimeout = std::chrono::seconds(5);
constexpr size_t kMaxAddressRecordBytes = sizeof(ListenerToken) + 512;

std::string addressKey(int rank) { return "bootstrap/rank/" + std::to_string(rank); }

}  // namespace

RankExchange::RankExchange(std::shared_ptr<Store> store, int rank, int nranks)
    : store_(std::move(store)), rank_(rank), nranks_(nranks) {
  if (nranks < 1 || rank < 0 || rank >= nranks)
    throwError(collInvalidArgument, "RankExchange: rank %d is outside [0, nranks=%d)", rank, nranks);
  ctx_.secret = store_->secret();
  ctx_.rank = rank;
  ctx_.nranks = nranks;
  if (nranks == 1) return;
  fillRandom(ctx_.token.data(), ctx_.token.size(), "the bootstrap listener's token");
  // The address this rank reaches the store from is one its peers can reach (the socket
  // transport's default too).
  const std::string host = store_->localAddress();
  listener_ = listenOn(host, 0);
  address_ = formatHostPort(host, localAddressOf(listener_.get()).port());
  gate_ = std::make_unique<ListenerGate>("bootstrap listener " + address_, LogSubsys::kBootstrap,
                                         GateRules{kMaxHandshakingLinks, kHelloTimeout});
  Bytes record(ctx_.token.begin(), ctx_.token.end());
  record.insert(record.end(), address_.begin(), address_.end());
  store_->set(addressKey(rank), record);
}

RankExchange::~RankExchange() = default;

bool RankExchange::expectsInbound(int rank) const {
  for (int d = 1; d < nranks_; d *= 2)
    if (peerAt(d) == rank) return true;
  return false;
}

RankLink* RankExchange::inboundFrom(int peer) {
  for (auto& link : links_)
    if (link && !link->dialled() && link->ready() && link->peer() == peer) return link.get();
  return nullptr;
}

RankLink* RankExchange::outboundTo(int peer) {
  for (auto& link : links_)
    if (link && link->dialled() && link->peer() == peer) return link.get();
  return nullptr;
}

void RankExchange::dialPeers(Deadline deadline) {
  const std::string during = "bootstrap allGather, dialling the peers";
  // Every address first: a peer's listener closes a connection that does not prove itself in
  // time, and this rank proves nothing while it waits for a late rank's address.
  std::vector<std::pair<int, Bytes>> records;
  for (int d = 1; d < nranks_; d *= 2) {
    const int peer = peerAt(-d);
    try {
      records.emplace_back(peer,
                           getUnlessDeparted(*store_, addressKey(peer), "allGather", "dialling the peers", deadline));
    } catch (const CollError& e) {
      if (e.code() != collTimeout) throw;
      throwError(collTimeout, "%s: rank %d never published its address (did it start, with the same nranks %d?): %s",
                 during.c_str(), peer, nranks_, e.what());
    }
  }
  for (const auto& [peer, record] : records) {
    std::string host;
    uint16_t port = 0;
    // From another process, through the store: bounded and parsed before use.
    if (record.size() <= sizeof(ListenerToken) || record.size() > kMaxAddressRecordBytes ||
        !splitHostPort(std::string(record.begin() + sizeof(ListenerToken), record.end()), &host, &port))
      throwError(collRemoteError, "%s: rank %d published a malformed address record (%zu bytes)", during.c_str(), peer,
                 record.size());
    ListenerToken token{};
    std::copy(record.begin(), record.begin() + sizeof(ListenerToken), token.begin());
    Fd fd = connectWithDeadline(host, port, deadline, "bootstrap listener",
                                [&] { throwIfARankDeparted(*store_, during, deadline); });
    links_.push_back(std::make_unique<RankLink>(std::move(fd), peer, token));
    if (!links_.back()->onWritable()) lostPeer(peer, during, deadline, false);  // the hello, now
  }
}

ListenerGate::Key RankExchange::keyOf(const RankLink& link) { return reinterpret_cast<uintptr_t>(&link); }

void RankExchange::acceptPending() {
  gate_->acceptPending(
      listener_.get(),
      [this](Fd& fd, const SocketAddress& from) -> std::optional<ListenerGate::Key> {
        setNoDelay(fd.get());
        links_.push_back(std::make_unique<RankLink>(std::move(fd), from.toString()));
        return keyOf(*links_.back());
      },
      dropUnproven_);
}

void RankExchange::forgetLink(size_t index) {
  if (!links_[index]->dialled()) gate_->forget(keyOf(*links_[index]));
  links_[index].reset();
}

void RankExchange::lostPeer(int peer, const std::string& during, Deadline deadline, bool handshakeDone) {
  // The peer may only have failed because another rank died: the notice names the first to go.
  throwIfARankDepartsBy(*store_, during, Clock::now() + kDepartureNoticeGrace, deadline);
  // A listener also closes connections that are not proven yet when strangers crowd it: that is
  // no sign its rank failed.
  if (!handshakeDone)
    throwError(collRemoteError,
               "%s: rank %d's bootstrap listener closed rank %d's connection before its handshake was done (rank %d "
               "exited, or its listener refused the connection or closed it to make room: its log says which)",
               during.c_str(), peer, rank_, peer);
  throwError(collRemoteError,
             "%s: rank %d closed its bootstrap connection with rank %d (it failed or exited) before "
             "the exchange was done",
             during.c_str(), peer, rank_);
}

// Anything wrong with a link to a known peer throws; a connection to the listener that fails its
// handshake is dropped (its slot in links_ set to null).
void RankExchange::serviceLink(size_t index, short revents, const std::string& during, Deadline deadline) {
  RankLink& link = *links_[index];
  const bool known = link.dialled() || link.ready();
  try {
    bool open = true;
    if ((revents & (POLLOUT | POLLERR | POLLHUP)) != 0 && link.sending()) open = link.onWritable();
    if (open && (revents & (POLLIN | POLLERR | POLLHUP)) != 0) open = link.onReadable();
    if (!open) {
      if (known) lostPeer(link.peer(), during, deadline, link.ready());
      forgetLink(index);
      return;
    }
    if (!known && (revents & POLLIN) != 0) gate_->heardFrom(keyOf(link));
    if (!link.ready()) {
      link.advanceHandshake(ctx_, [&](int rank) { return expectsInbound(rank) && inboundFrom(rank) == nullptr; });
      if (link.ready() && !link.dialled()) gate_->proven(keyOf(link));
    }
    if (link.sending() && !link.onWritable()) {
      if (known) lostPeer(link.peer(), during, deadline, link.ready());
      forgetLink(index);
    }
  } catch (const LinkRefused& refused) {
    if (link.dialled())
      throwError(collRemoteError, "%s: the link to rank %d failed: %s", during.c_str(), link.peer(),
                 refused.why.c_str());
    if (link.ready())
      throwError(collRemoteError, "%s: rank %d sent %s", during.c_str(), link.peer(), refused.why.c_str());
    gate_->warn(formatString("dropped a connection from %s: %s", link.from().c_str(), refused.why.c_str()));
    forgetLink(index);
  }
}

template <class Done>
void RankExchange::pump(Done done, int wantedFrom, const std::string& during, Deadline deadline) {
  std::vector<pollfd> fds;
  while (!done()) {
    if (listener_.valid()) {
      gate_->dropExpired(dropUnproven_);
      links_.erase(std::remove(links_.begin(), links_.end(), nullptr), links_.end());
    }
    fds.clear();
    fds.push_back({listener_.valid() ? gate_->listenerToPoll(listener_.get()) : -1, POLLIN, 0});
    for (const auto& link : links_) {
      // A ready link not in use is not polled: a peer that finished and left must not look like a
      // failure here (it can only leave once it has everything this rank sends it).
      const bool wanted = !link->dialled() && link->ready() && link->peer() == wantedFrom;
      const short events = link->events(wanted);
      fds.push_back({events != 0 ? link->fd() : -1, events, 0});
    }
    Deadline slice = std::min(deadline, Clock::now() + kDepartureCheckInterval);
    if (listener_.valid()) slice = std::min(slice, gate_->nextDeadline());
    const int rc = poll(fds.data(), fds.size(), pollTimeoutMs(slice));
    if (rc < 0 && errno != EINTR) throwSystemError("poll() on the bootstrap links");
    if (rc <= 0) {
      if (Clock::now() >= deadline)
        throwError(collTimeout, "%s: timed out (these peers, or a rank they wait for, did not do their part)",
                   during.c_str());
      throwIfARankDeparted(*store_, during, deadline);
      continue;
    }
    const size_t linkCount = links_.size();
    for (size_t i = 0; i < linkCount; ++i)
      if (fds[i + 1].revents != 0) serviceLink(i, fds[i + 1].revents, during, deadline);
    if ((fds[0].revents & POLLIN) != 0) acceptPending();
    links_.erase(std::remove(links_.begin(), links_.end(), nullptr), links_.end());
    // Every peer that dials this rank has: nothing more to listen for.
    if (listener_.valid()) {
      bool all = true;
      for (int d = 1; d < nranks_ && all; d *= 2) all = inboundFrom(peerAt(d)) != nullptr;
      if (all) {
        listener_.reset();
        for (size_t i = 0; i < links_.size(); ++i)
          if (!links_[i]->dialled() && !links_[i]->ready()) forgetLink(i);
        links_.erase(std::remove(links_.begin(), links_.end(), nullptr), links_.end());
      }
    }
  }
}

std::vector<Bytes> RankExchange::allGather(const std::string& tag, const Bytes& mine, Deadline deadline) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (nranks_ == 1) return {mine};
  if (!broken_.empty())
    throwError(collInvalidUsage, "bootstrap allGather('%s'): the links failed in an earlier exchange: %s", tag.c_str(),
               broken_.c_str());
  try {
    return gatherRounds(tag, mine, deadline);
  } catch (const CollError& e) {
    // Half a frame may be on the wire: the links cannot be trusted for another exchange.
    broken_ = e.what();
    throw;
  }
}

std::vector<Bytes> RankExchange::gatherRounds(const std::string& tag, const Bytes& mine, Deadline deadline) {
  if (!dialled_) {
    dialPeers(deadline);
    dialled_ = true;
  }
  std::vector<Bytes> have{mine};
  for (int d = 1, round = 0; d < nranks_; d *= 2, ++round) {
    const int count = std::min(d, nranks_ - d);
    const int to = peerAt(-d);
    const int from = peerAt(d);
    const std::string during = formatString("bootstrap allGather('%s') round %d (records to rank %d, from rank %d)",
                                            tag.c_str(), round, to, from);
    FrameWriter frame(Op::kRankRecords, 0);
    frame.str(tag)
        .u32(static_cast<uint32_t>(round))
        .u32(static_cast<uint32_t>(rank_))
        .u32(static_cast<uint32_t>(count));
    size_t bytes = 0;
    for (int i = 0; i < count; ++i) {
      bytes += have[static_cast<size_t>(i)].size() + 4;
      if (bytes > wire::kMaxBodyBytes - tag.size() - 64)
        throwError(collInvalidArgument, "%s: %d records of %zu bytes and more: above the %zu bytes a frame may carry",
                   during.c_str(), i + 1, bytes, wire::kMaxBodyBytes);
      frame.bytes(have[static_cast<size_t>(i)]);
    }
    RankLink* out = outboundTo(to);
    if (out == nullptr) throwError(collInternalError, "%s: no link to rank %d", during.c_str(), to);
    Bytes encoded = frame.finish();
    bool queued = false;
    std::optional<LinkFrame> received;
    pump(
        [&] {
          if (!queued && out->ready()) {
            out->queue(std::move(encoded));
            queued = true;
            if (!out->onWritable()) lostPeer(to, during, deadline);
          }
          if (!received)
            if (RankLink* in = inboundFrom(from)) received = in->takeFrame();
          return queued && !out->sending() && received.has_value();
        },
        from, during, deadline);
    // From the network: every field checked against what this round must carry.
    FrameReader r(received->fields.data(), received->fields.size());
    const std::string theirTag = r.str(kMaxKeyBytes);
    const uint32_t theirRound = r.u32();
    const uint32_t first = r.u32();
    const uint32_t theirCount = r.u32();
    if (!r.ok() || theirTag != tag || theirRound != static_cast<uint32_t>(round) ||
        first != static_cast<uint32_t>(from) || theirCount != static_cast<uint32_t>(count))
      throwError(collRemoteError,
                 "%s: rank %d sent records for allGather('%.*s') round %u from rank %u, %u of them, where %d were "
                 "expected (did the ranks call the bootstrap collectives in different orders?)",
                 during.c_str(), from, static_cast<int>(std::min<size_t>(theirTag.size(), 200)), theirTag.c_str(),
                 theirRound, first, theirCount, count);
    for (int i = 0; i < count; ++i) have.push_back(r.bytes(kMaxValueBytes));
    if (!r.atEnd()) throwError(collRemoteError, "%s: rank %d sent malformed records", during.c_str(), from);
  }
  // have[i] is rank (rank_ + i)'s record.
  std::vector<Bytes> all(static_cast<size_t>(nranks_));
  for (int i = 0; i < nranks_; ++i) all[static_cast<size_t>(peerAt(i))] = std::move(have[static_cast<size_t>(i)]);
  return all;
}

}  // namespace bootstrap
}  // namespace coll
