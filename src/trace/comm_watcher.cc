#include "src/trace/comm_watcher.h"

#include <algorithm>
#include <sstream>

#include "bootstrap/store_deadline.h"
#include "common/error.h"
#include "common/logging.h"
#include "src/trace/dump_signal.h"

namespace coll {
namespace trace {
namespace {

// How long one wait for the next message lasts: how late a SIGUSR1 dump may come, and how often a
// rank with nothing to do asks the store anything.
constexpr auto kSlice = std::chrono::milliseconds(1000);
// How long a message to the other ranks (a verdict, a revoke, an exclusion, the stop at
// destruction) and the handling of one received may take: a store whose host is stopped must not
// hold a revoke, a shrink or a destroy for the store's request timeout.
constexpr auto kNoticeTime = std::chrono::milliseconds(2000);
// How often the rank that holds the store's server looks again whether a peer read its inbox or
// closed it, before the server goes.
constexpr auto kPoll = std::chrono::milliseconds(50);
// How many waits a message number that was taken but never written may hold the later ones back.
constexpr int kHoleWaits = 3;
// A probe's answer carries this many of the newest calls: the hang line needs the last one, a
// reader of the log a few.
constexpr size_t kProbeCalls = 8;

bootstrap::Bytes bytesOf(const std::string& text) { return bootstrap::Bytes(text.begin(), text.end()); }
std::string textOf(const bootstrap::Bytes& bytes) { return std::string(bytes.begin(), bytes.end()); }

}  // namespace

CommWatcher::CommWatcher(std::shared_ptr<bootstrap::Store> store, int rank, int nranks, std::string label,
                         WatcherHooks hooks)
    : store_(std::move(store)), rank_(rank), nranks_(nranks), label_(std::move(label)), hooks_(std::move(hooks)) {
  signalsSeen_ = dumpSignalCount();
  thread_ = std::thread([this] { run(); });
}

CommWatcher::~CommWatcher() {
  stopping_.store(true);
  const Deadline deadline = Clock::now() + kNoticeTime;
  try {
    bootstrap::StoreRequestDeadline bound(deadline);
    send(rank_, "stop");
  } catch (const std::exception&) {
    // The store is gone: the watcher's own wait fails as well, or ends within a slice.
  }
  if (thread_.joinable()) thread_.join();
  try {
    bootstrap::StoreRequestDeadline bound(deadline);
    store_->set(inboxKey(rank_, "closed"), {});  // what comes to the inbox from now on is not read
  } catch (const std::exception&) {
  }
}

std::string CommWatcher::inboxKey(int rank, const std::string& what) const {
  return "watch/" + std::to_string(rank) + "/" + what;
}

void CommWatcher::send(int to, const std::string& message) {
  if (to != rank_) sentToPeers_.store(true);
  const int64_t k = store_->add(inboxKey(to, "n"), 1);
  store_->set(inboxKey(to, std::to_string(k)), bytesOf(message));
}

void CommWatcher::sendToAll(const std::string& message) {
  bootstrap::StoreRequestDeadline bound(Clock::now() + kNoticeTime);
  try {
    for (int r = 0; r < nranks_; ++r)
      if (r != rank_) send(r, message);
  } catch (const std::exception& e) {
    COLL_INFO(kColl, "%s: could not reach every rank through the store: %s", label_.c_str(), e.what());
  }
}

void CommWatcher::tellVerdict(const std::string& line, int silent) {
  sendToAll("verdict " + std::to_string(rank_) + " " + std::to_string(silent) + " " + line);
}

bool CommWatcher::peerVerdict(std::string* line, int* silent) const {
  std::lock_guard<std::mutex> lock(verdictMutex_);
  if (bestVerdictSilent_ < 0) return false;
  *line = bestVerdict_;
  *silent = bestVerdictSilent_;
  return true;
}

void CommWatcher::tellRevoked() { sendToAll("revoke " + std::to_string(rank_)); }

void CommWatcher::tellExcluded(const std::vector<int>& ranks) {
  bootstrap::StoreRequestDeadline bound(Clock::now() + kNoticeTime);
  try {
    for (int r : ranks)
      if (r != rank_) send(r, "excluded " + std::to_string(rank_));
  } catch (const std::exception& e) {
    COLL_INFO(kColl, "%s: could not tell the excluded ranks through the store: %s", label_.c_str(), e.what());
  }
}

void CommWatcher::awaitInboxesRead() {
  const Deadline deadline = Clock::now() + kNoticeTime;
  try {
    bootstrap::StoreRequestDeadline bound(deadline);
    if (!sentToPeers_.load() && store_->add(inboxKey(rank_, "n"), 0) == 0) return;
    for (int r = 0; r < nranks_; ++r) {
      if (r == rank_ || !hooks_.silenceOf(r).empty()) continue;
      if (!awaitInboxRead(r, deadline)) {
        COLL_INFO(kColl, "%s: rank %d has not read every notice sent to it; the store goes anyway", label_.c_str(), r);
        return;
      }
    }
  } catch (const std::exception& e) {
    COLL_INFO(kColl, "%s: could not learn whether every rank read its notices: %s", label_.c_str(), e.what());
  }
}

bool CommWatcher::awaitInboxRead(int rank, Deadline deadline) {
  // A rank whose communicator is gone reads no more: what came after its stop stays unread.
  const std::string closed = inboxKey(rank, "closed");
  while (true) {
    const int64_t sent = store_->add(inboxKey(rank, "n"), 0);
    if (sent == 0 || store_->check({closed})) return true;
    try {
      store_->get(inboxKey(rank, "read/" + std::to_string(sent)), std::min(deadline, Clock::now() + kPoll));
      return true;
    } catch (const CollError& e) {
      if (e.code() != collTimeout) throw;
      if (Clock::now() >= deadline) return false;
    }
  }
}

void CommWatcher::run() {
  int64_t next = 1;
  int heldBack = 0;  // waits in a row in which a later message waited behind `next`
  try {
    while (!stopping_.load()) {
      const std::string key = inboxKey(rank_, std::to_string(next));
      try {
        std::string message;
        {
          // A late reply is dropped; the message stays in the store for the next wait.
          bootstrap::StoreRequestDeadline bound(Clock::now() + kSlice + kNoticeTime);
          message = textOf(store_->get(key, Clock::now() + kSlice));
        }
        const std::string read = inboxKey(rank_, "read/" + std::to_string(next));
        ++next;
        heldBack = 0;
        bootstrap::StoreRequestDeadline bound(Clock::now() + kNoticeTime);
        if (!handle(message)) return;
        store_->set(read, {});
        continue;
      } catch (const CollError& e) {
        if (e.code() != collTimeout) throw;
      }
      bootstrap::StoreRequestDeadline bound(Clock::now() + kNoticeTime);
      if (const uint64_t signals = dumpSignalCount(); signals != signalsSeen_) {
        signalsSeen_ = signals;
        hooks_.dump("signal");
      }
      // A number taken and never written (its sender died) would hold every later message back:
      // skip it once it has for kHoleWaits waits. Not sooner: a sender writes its message a round
      // trip after it takes the number, and two senders may take numbers in either order.
      heldBack = store_->add(inboxKey(rank_, "n"), 0) > next ? heldBack + 1 : 0;
      if (heldBack >= kHoleWaits) {
        COLL_INFO(kColl, "%s: message %lld never came; reading on", label_.c_str(), static_cast<long long>(next));
        ++next;
        heldBack = 0;
      }
    }
  } catch (const std::exception& e) {
    if (!stopping_.load()) COLL_INFO(kColl, "%s: the watcher stops: %s", label_.c_str(), e.what());
  }
}

bool CommWatcher::handle(const std::string& message) {
  std::istringstream words(message);
  std::string kind;
  int from = -1;
  words >> kind;
  if (kind == "stop") return false;
  if (kind == "probe") {
    std::string id;
    words >> id >> from;
    answerProbe(id, from);
  } else if (kind == "verdict") {
    int silent = -1;
    words >> from >> silent;
    std::string line;
    std::getline(words, line);
    if (!line.empty() && line[0] == ' ') line.erase(0, 1);
    // Every rank that timed out reports; the same line once is enough.
    if (line != lastVerdict_) COLL_WARN(kColl, "%s: rank %d reports a hang: %s", label_.c_str(), from, line.c_str());
    lastVerdict_ = line;
    std::lock_guard<std::mutex> lock(verdictMutex_);
    if (silent >= 0 && (bestVerdictSilent_ < 0 || silent < bestVerdictSilent_)) {
      bestVerdict_ = line;
      bestVerdictSilent_ = silent;
    }
  } else if (kind == "revoke" || kind == "excluded") {
    words >> from;
    if (from >= 0 && from < nranks_) (kind == "revoke" ? hooks_.revoked : hooks_.excluded)(from);
  }
  return true;
}

void CommWatcher::answerProbe(const std::string& id, int from) {
  COLL_INFO(kColl, "%s: rank %d asks for this rank's calls (probe %s)", label_.c_str(), from, id.c_str());
  store_->set("watch/probe/" + id + "/" + std::to_string(rank_), bytesOf(hooks_.report("probe", kProbeCalls)));
  hooks_.dump("timeout");
}

std::vector<RankStatus> CommWatcher::probe(const std::string& mine, std::chrono::milliseconds patience) {
  std::vector<RankStatus> statuses;
  statuses.push_back(statusFromTrace(parseTrace(mine)));
  const Deadline deadline = Clock::now() + patience;
  bootstrap::StoreRequestDeadline bound(deadline);
  std::string id;
  try {
    id = std::to_string(store_->add("watch/probes", 1));
    for (int r = 0; r < nranks_; ++r)
      if (r != rank_) send(r, "probe " + id + " " + std::to_string(rank_));
  } catch (const std::exception& e) {
    for (int r = 0; r < nranks_; ++r)
      if (r != rank_) statuses.push_back(silentRank(r, "the store is unreachable"));
    return statuses;
  }
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_) continue;
    try {
      const std::string key = "watch/probe/" + id + "/" + std::to_string(r);
      RankStatus status = statusFromTrace(parseTrace(textOf(store_->get(key, deadline))));
      status.rank = r;  // whatever the answer claims, it came from r's key
      statuses.push_back(status);
    } catch (const std::exception&) {
      statuses.push_back(silentRank(r, hooks_.silenceOf(r)));
    }
  }
  return statuses;
}

}  // namespace trace
}  // namespace coll
