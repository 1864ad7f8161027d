// collCommShrink: the survivors of this communicator agree on who is gone and build a
// communicator of the others, without a new unique id. They meet at the lowest live rank's
// meeting point (src/ft/meeting_point.h: works whoever died, the store's host included), agree
// there (src/ft/agreement.h), and build the new communicator on its new rank 0's server, so the
// store moves to the lowest surviving rank. Ranks keep their order. A communicator on a store in
// process memory (ranks that are threads) agrees and builds on that store instead.
#include <algorithm>

#include "bootstrap/unique_id.h"
#include "common/error.h"
#include "common/logging.h"
#include "src/comm.h"
#include "src/ft/agreement.h"
#include "src/ft/peer_process.h"
#include "src/trace/comm_watcher.h"

namespace coll {
namespace {

// A store that the communicator built on it owns: when the communicator goes, so does the
// connection, and the server (this rank's, which it hosts) ends once the other ranks left too.
std::shared_ptr<bootstrap::Store> hostedStore(const collUniqueId& id, Deadline deadline) {
  std::shared_ptr<bootstrap::Store> client = bootstrap::connectStore(id, deadline);
  return std::shared_ptr<bootstrap::Store>(client.get(), [client, id](bootstrap::Store*) mutable {
    client.reset();
    bootstrap::releaseUniqueIdServer(id);
  });
}

}  // namespace

std::unique_ptr<Communicator> Communicator::shrink(const std::vector<int>& exclude, bool revokeFirst,
                                                   const CommOptions& options) {
  if (std::find(exclude.begin(), exclude.end(), rank_) != exclude.end())
    throwError(collInvalidArgument,
               "collCommShrink: excludeRanksList names this rank (%d): an excluded rank does not call collCommShrink",
               rank_);
  if (const int by = excludedBy_.load(); by >= 0)
    throwError(collRemoteError,
               "collCommShrink: the survivors already shrank this communicator without this rank (rank %d; rank %d "
               "told it): it came later than COLL_AGREE_TIMEOUT_MS, or was stopped",
               rank_, by);
  if (revokeFirst) revoke();
  const std::string prefix = "shrink" + std::to_string(++shrinkCount_);
  // Each step has the communicator's timeout from its own start: the meeting and the agreement
  // may each wait `patience` for a stopped rank.
  const auto timeout = std::chrono::milliseconds(options.timeoutMs);
  const auto patience = std::chrono::milliseconds(std::min(params_.agreeTimeoutMs, options.timeoutMs));
  auto gone = [this](int r) {
    return r != rank_ && ft::peerProcessState(peers_[r], peers_[rank_]) == ft::ProcessState::kGone;
  };

  // Where the survivors meet: every survivor's server runs until this communicator goes, so that
  // a shrink that failed (another rank died meanwhile) can be tried again.
  std::shared_ptr<bootstrap::Store> meetingStore = store_;
  if (meetingListener_) {
    if (!meeting_) meeting_ = std::make_unique<ft::MeetingPoint>(meetingListener_->take(),
                                                                  meetingCards_[rank_].hostString(), store_->secret());
    meetingStore = meeting_->meet(meetingCards_, rank_, gone, patience);
  }
  auto agreeStore = std::make_shared<bootstrap::PrefixStore>(prefix, meetingStore);

  ft::AgreementInput input;
  input.rank = rank_;
  input.nranks = nranks_;
  input.excluded = exclude;
  for (int r = 0; r < nranks_; ++r)
    if (gone(r)) input.excluded.push_back(r);
  input.gone = gone;
  input.toldExcluded = [this] { return excludedBy_.load() >= 0; };
  input.patience = patience;
  input.deadline = Clock::now() + timeout;
  const std::vector<int> excluded = ft::agreeOnExcluded(*agreeStore, input);

  std::vector<int> members;
  for (int r = 0; r < nranks_; ++r)
    if (!std::binary_search(excluded.begin(), excluded.end(), r)) members.push_back(r);
  const int newRank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  COLL_INFO(kInit, "comm %s rank %d: shrinking to %zu ranks without [%s]; this rank becomes rank %d",
            options_.name.c_str(), rank_, members.size(), ft::formatRankList(excluded).c_str(), newRank);

  // Excluded ranks that are alive after all (stopped, late) learn it through the old store, if it
  // still answers, rather than meet alone later and build a communicator of their own.
  if (newRank == 0 && watcher_) watcher_->tellExcluded(excluded);

  // The new communicator's store: its rank 0's server (the store moves to the lowest survivor).
  std::shared_ptr<bootstrap::Store> base = store_;
  if (meetingListener_) {
    const int newRoot = members[0];
    const Deadline deadline = Clock::now() + timeout;
    base = newRoot == rank_ ? hostedStore(meeting_->keepServer(), deadline)
                            : bootstrap::connectStore(meeting_->idOf(meetingCards_[newRoot]), deadline);
  }
  auto childStore = std::make_shared<bootstrap::PrefixStore>(prefix + "/comm", base);
  auto child = std::make_unique<Communicator>(childStore, static_cast<int>(members.size()), newRank, options);
  child->excludedFromParent_ = excluded;
  return child;
}

}  // namespace coll
