#include "src/ft/agreement.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "common/error.h"
#include "common/logging.h"

namespace coll {
namespace ft {
namespace {

bootstrap::Bytes bytesOf(const std::string& text) { return bootstrap::Bytes(text.begin(), text.end()); }
std::string textOf(const bootstrap::Bytes& bytes) { return std::string(bytes.begin(), bytes.end()); }

// One rank's reading of the views, as they arrive.
class ViewCollector {
 public:
  ViewCollector(bootstrap::Store& store, const AgreementInput& input)
      : store_(store), in_(input), excluded_(input.nranks, false), heard_(input.nranks, false) {
    for (int r : input.excluded) excluded_[r] = true;
    heard_[input.rank] = true;
  }

  void post() {
    const int64_t k = store_.add("posted", 1);
    store_.set("view/" + std::to_string(k), bytesOf(std::to_string(in_.rank) + ":" + formatRankList(list())));
  }

  // Reads views until every rank not excluded has been heard from, or `patience` passed (the
  // silent ones are then excluded).
  void collect() {
    const Deadline giveUp = std::min(Clock::now() + in_.patience, in_.deadline);
    auto pause = std::chrono::microseconds(500);
    for (;;) {
      if (in_.toldExcluded && in_.toldExcluded())
        throwError(collRemoteError,
                   "collCommShrink: the survivors shrank the communicator without this rank (rank %d) while it waited "
                   "for them: it came later than COLL_AGREE_TIMEOUT_MS, or was stopped",
                   in_.rank);
      readNewViews(giveUp);
      for (int r = 0; r < in_.nranks; ++r)
        if (!excluded_[r] && !heard_[r] && in_.gone && in_.gone(r)) exclude(r, "its process exited");
      if (waitingFor().empty()) return;
      if (Clock::now() >= giveUp) break;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(20000));
    }
    for (int r : waitingFor()) exclude(r, "it posted no view in time");
  }

  std::vector<int> list() const {
    std::vector<int> ranks;
    for (int r = 0; r < in_.nranks; ++r)
      if (excluded_[r]) ranks.push_back(r);
    return ranks;
  }

 private:
  std::vector<int> waitingFor() const {
    std::vector<int> ranks;
    for (int r = 0; r < in_.nranks; ++r)
      if (!excluded_[r] && !heard_[r]) ranks.push_back(r);
    return ranks;
  }

  void exclude(int r, const char* why) {
    if (excluded_[r]) return;
    excluded_[r] = true;
    COLL_INFO(kInit, "shrink: rank %d excludes rank %d: %s", in_.rank, r, why);
  }

  // Views are numbered as they are posted; a number taken by a rank that died before it wrote
  // its view is a hole, skipped once the patience is over.
  void readNewViews(Deadline giveUp) {
    const int64_t posted = store_.add("posted", 0);
    while (nextView_ <= posted) {
      const std::string key = "view/" + std::to_string(nextView_);
      if (!store_.check({key})) {
        if (Clock::now() < giveUp) return;
        ++nextView_;
        continue;
      }
      takeView(textOf(store_.get(key, in_.deadline)));
      ++nextView_;
    }
  }

  void takeView(const std::string& view) {
    const size_t colon = view.find(':');
    if (colon == std::string::npos)
      throwError(collRemoteError, "collCommShrink: malformed view '%s' from the meeting point", view.c_str());
    const std::vector<int> who = parseRankList(view.substr(0, colon), in_.nranks, "a view's rank");
    if (who.size() != 1)
      throwError(collRemoteError, "collCommShrink: malformed view '%s' from the meeting point", view.c_str());
    heard_[who[0]] = true;
    // Another rank's exclusions count even where they name this rank: the decision must hold them.
    const std::string because = "rank " + std::to_string(who[0]) + " excludes it";
    for (int r : parseRankList(view.substr(colon + 1), in_.nranks, "a view")) exclude(r, because.c_str());
  }

  bootstrap::Store& store_;
  const AgreementInput& in_;
  std::vector<bool> excluded_;
  std::vector<bool> heard_;
  int64_t nextView_ = 1;
};

}  // namespace

std::string formatRankList(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ",") + std::to_string(r);
  return text;
}

std::vector<int> parseRankList(const std::string& text, int nranks, const char* what) {
  std::vector<int> ranks;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    char* stop = nullptr;
    const long r = strtol(item.c_str(), &stop, 10);
    if (item.empty() || *stop != '\0' || r < 0 || r >= nranks)
      throwError(collRemoteError, "collCommShrink: %s lists '%s': expected a rank in [0, %d)", what, item.c_str(),
                 nranks);
    ranks.push_back(static_cast<int>(r));
    start = end + 1;
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

std::vector<int> agreeOnExcluded(bootstrap::Store& store, const AgreementInput& input) {
  ViewCollector views(store, input);
  views.post();
  views.collect();
  if (store.add("decider", 1) == 1) {
    store.set("decision", bytesOf(formatRankList(views.list())));
    COLL_INFO(kInit, "shrink: rank %d decided: exclude ranks [%s]", input.rank, formatRankList(views.list()).c_str());
  }
  const std::vector<int> decision = parseRankList(textOf(store.get("decision", input.deadline)), input.nranks,
                                                  "the decision");
  if (std::binary_search(decision.begin(), decision.end(), input.rank))
    throwError(collRemoteError,
               "collCommShrink: the survivors excluded this rank (rank %d): the agreed exclusions are [%s] (another "
               "rank took it for gone, or it came later than COLL_AGREE_TIMEOUT_MS)",
               input.rank, formatRankList(decision).c_str());
  return decision;
}

}  // namespace ft
}  // namespace coll
