// What a process group does besides moving tensors: the monitored barrier that names the ranks
// that did not arrive, split_group, abort and shutdown.
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

#include "library_call.h"
#include "process_group.h"

namespace torch_collective {
namespace {

using Clock = std::chrono::steady_clock;

// What rank 0 writes under the release key when every rank arrived; anything else is the error.
const std::string kArrivedEveryone = "ok";
constexpr std::chrono::milliseconds kVerdictGrace{2000};

std::string keyOf(uint64_t barrier, const std::string& what) {
  return "torch_collective/monitored_barrier/" + std::to_string(barrier) + "/" + what;
}

std::string arrivedKey(uint64_t barrier, int rank) { return keyOf(barrier, "arrived/" + std::to_string(rank)); }

std::string rankList(const std::vector<int>& ranks) {
  std::ostringstream out;
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  return out.str();
}

std::vector<uint8_t> bytesOf(const std::string& text) { return std::vector<uint8_t>(text.begin(), text.end()); }

}  // namespace

void ProcessGroupCollective::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  TORCH_CHECK(store_, "collective backend: monitoredBarrier needs the group's store, and this group has none");
  // A negative timeout is torch's "unset" (kUnsetTimeout): the group's. Zero is zero, as with
  // Gloo: rank 0 fails at once.
  std::chrono::milliseconds timeout = opts.timeout;
  if (timeout < std::chrono::milliseconds::zero()) timeout = std::chrono::milliseconds(comm_.timeoutMs());
  const uint64_t barrier = ++monitoredBarriers_;
  const std::string release = keyOf(barrier, "release");
  if (getRank() != 0) {
    store_->set(arrivedKey(barrier, getRank()), bytesOf("1"));
    // Rank 0 gives its verdict at its own deadline: wait a little past it to hear the verdict,
    // which names the missing ranks, rather than time out alongside it.
    const std::chrono::milliseconds patience = timeout + kVerdictGrace;
    try {
      store_->wait({release}, patience);
    } catch (const std::exception&) {
      TORCH_CHECK(false, "[Rank ", getRank(), "]: monitoredBarrier: Timed out after ", patience.count(),
                  " ms waiting for rank 0 to see every rank arrive (rank 0 may have failed or left)");
    }
    std::vector<uint8_t> outcome = store_->get(release);
    std::string message(outcome.begin(), outcome.end());
    TORCH_CHECK(message == kArrivedEveryone, message);
    return;
  }
  if (timeout == std::chrono::milliseconds::zero() && getSize() > 1) {
    // Gloo's words for a rank 0 whose time ran out before it looked at any rank.
    const std::string message =
        "[Rank 0]: Rank 0 timed out in monitoredBarrier after 0 ms (collective backend: no rank was waited for)";
    store_->set(release, bytesOf(message));
    TORCH_CHECK(false, message);
  }
  // Rank 0 polls for the others' arrival keys: a store wait would stop at the first missing rank
  // and could not name the rest.
  std::vector<int> missing;
  for (int rank = 1; rank < getSize(); ++rank) missing.push_back(rank);
  const Clock::time_point deadline = Clock::now() + timeout;
  auto poll = std::chrono::microseconds(200);
  while (!missing.empty()) {
    missing.erase(std::remove_if(missing.begin(), missing.end(),
                                 [&](int rank) { return store_->check({arrivedKey(barrier, rank)}); }),
                  missing.end());
    if (missing.empty() || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(poll);
    poll = std::min(poll * 2, std::chrono::microseconds(10000));
  }
  if (missing.empty()) {
    store_->set(release, bytesOf(kArrivedEveryone));
    return;
  }
  if (!waitAllRanks) missing.erase(missing.begin() + 1, missing.end());
  std::ostringstream message;
  message << "[Rank 0]: " << (missing.size() == 1 ? "Rank " : "Ranks ") << rankList(missing)
          << " failed to pass monitoredBarrier in " << timeout.count() << " ms (Timed out; collective backend)";
  store_->set(release, bytesOf(message.str()));
  TORCH_CHECK(false, message.str());
}

#if TORCH_COLLECTIVE_HAS_SPLIT_AND_ABORT
c10::intrusive_ptr<c10d::Backend> ProcessGroupCollective::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                                const std::vector<int>& ranks,
                                                                const c10::intrusive_ptr<Options>& opts) {
  for (int rank : ranks) checkRoot(rank, "split");
  const auto mine = std::find(ranks.begin(), ranks.end(), getRank());
  const bool member = mine != ranks.end();
  // Disjoint groups have different smallest ranks: that names the group. The new ranks follow the
  // order of `ranks`, as torch numbers the new group's members.
  const int color = member ? *std::min_element(ranks.begin(), ranks.end()) : COLL_SPLIT_NOCOLOR;
  // torch's default timeout means "none given": the new communicator inherits this one's (a NULL
  // config), as groups made by new_group do.
  const bool ownTimeout = opts && opts->timeout.count() > 0 && opts->timeout != ::kBackendDefaultTimeout;
  const int timeoutMs = ownTimeout ? static_cast<int>(std::min<int64_t>(opts->timeout.count(), INT32_MAX))
                                   : comm_.timeoutMs();
  auto newComm = std::make_shared<collComm_t>(nullptr);
  collComm_t comm = comm_.handle();
  const int key = member ? static_cast<int>(mine - ranks.begin()) : 0;
  // Behind this group's queued calls: the split is a call on this communicator like the others.
  c10::intrusive_ptr<c10d::Work> work = enqueue(c10d::OpType::UNKNOWN, {}, {}, nullptr, [=] {
    collConfig_t config = COLL_CONFIG_INITIALIZER;
    config.timeoutMs = timeoutMs;
    config.commName = "torch-split";
    checkResult(collCommSplit(comm, color, key, newComm.get(), ownTimeout ? &config : nullptr));
  });
  work->wait();
  if (*newComm == nullptr) return nullptr;
  return c10::make_intrusive<ProcessGroupCollective>(*newComm, timeoutMs, store);
}

c10::intrusive_ptr<c10d::Backend::Options> ProcessGroupCollective::getBackendOptions() {
  return c10::make_intrusive<Options>(getBackendName(), std::chrono::milliseconds(comm_.timeoutMs()));
}

void ProcessGroupCollective::abort() {
  anySource_->cancel();
  queue_->abort([this] { comm_.abort(); });
}

void ProcessGroupCollective::shutdown() { queue_->shutdown(); }
#endif

}  // namespace torch_collective
