#include "src/ft/meeting_point.h"

#include <cstring>

#include "bootstrap/tcp_store.h"
#include "bootstrap/unique_id.h"
#include "common/error.h"
#include "common/logging.h"
#include "common/socket.h"

namespace coll {
namespace ft {
namespace {

// Thrown between connection attempts to give up on a refused one: nothing listens there, so the
// rank left (its communicator is gone, or its process) and waiting would only cost `patience`.
struct Refused {};

// True when a TCP connection to the card's address opens before the deadline; false when it is
// refused (nothing listens) or the deadline passes (an unreachable host).
bool somethingListens(const MeetingCard& card, Deadline deadline) {
  try {
    Fd probe = connectWithDeadline(card.hostString(), card.port, deadline, "meeting point", [] { throw Refused{}; });
    return true;
  } catch (const Refused&) {
    return false;
  } catch (const CollError&) {
    return false;
  }
}

}  // namespace

std::string MeetingCard::hostString() const { return std::string(host, strnlen(host, sizeof(host))); }

MeetingListener::MeetingListener(const std::string& host) {
  if (host.size() >= sizeof(card_.host))
    throwError(collInternalError, "meeting point: address '%s' is longer than the %zu bytes its card holds",
               host.c_str(), sizeof(card_.host) - 1);
  fd_ = listenOn(host, 0);
  memcpy(card_.host, host.data(), host.size());
  card_.port = localAddressOf(fd_.get()).port();
}

MeetingPoint::MeetingPoint(Fd listener, const std::string& host, const bootstrap::Secret& secret)
    : secret_(secret), ownId_(bootstrap::serveUniqueIdOn(std::move(listener), host, secret)) {}

MeetingPoint::~MeetingPoint() {
  if (!kept_) bootstrap::releaseUniqueIdServer(ownId_);
}

collUniqueId MeetingPoint::idOf(const MeetingCard& card) const {
  bootstrap::UniqueIdInfo info;
  info.host = card.hostString();
  info.port = card.port;
  info.secret = secret_;
  return bootstrap::encodeUniqueId(info);
}

collUniqueId MeetingPoint::keepServer() {
  kept_ = true;
  return ownId_;
}

std::shared_ptr<bootstrap::Store> MeetingPoint::meet(const std::vector<MeetingCard>& cards, int rank,
                                                     const std::function<bool(int)>& gone,
                                                     std::chrono::milliseconds patience) {
  for (int r = 0; r < static_cast<int>(cards.size()); ++r) {
    if (cards[r].empty() || (r != rank && gone(r))) continue;
    const Deadline deadline = Clock::now() + patience;
    if (r != rank && !somethingListens(cards[r], deadline)) {
      COLL_INFO(kInit, "shrink: rank %d: nothing listens at rank %d's meeting point", rank, r);
      continue;
    }
    try {
      auto store = bootstrap::connectStore(idOf(cards[r]), deadline);
      meetingRank_ = r;
      COLL_INFO(kInit, "shrink: rank %d meets the survivors at rank %d's meeting point %s", rank, r,
                formatHostPort(cards[r].hostString(), cards[r].port).c_str());
      return store;
    } catch (const CollError& e) {
      // Accepted but not answered: stopped, or alive and not shrinking (it will be excluded).
      COLL_INFO(kInit, "shrink: rank %d: rank %d's meeting point did not answer: %s", rank, r, e.what());
    }
  }
  throwError(collRemoteError, "collCommShrink: no rank's meeting point answered, not even this rank's (rank %d)",
             rank);
}

}  // namespace ft
}  // namespace coll
