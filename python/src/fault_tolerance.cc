// Surviving a lost rank from torch (docs/pytorch.md, "Surviving a lost rank"): revoke, and shrink
// as torch 2.x's shrink_group asks backends (Backend::shrink) and as torch_collective.shrink_group
// offers on every torch line.
//
// The library's survivors agree on the ranks to leave out (the union of what each passed and the
// ranks found gone), which may be more than a caller passed; torch builds its new group's rank
// mapping from the caller's list. So a shrink runs in two steps: prepareShrink makes the new
// communicator and says which ranks were left out; shrink (or takeShrunk on 1.x) hands it over
// when the list matches. A shrink whose list differs keeps the communicator and fails, naming the
// agreed list, so that the caller can ask again with it (the other survivors already built theirs).
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <algorithm>
#include <sstream>

#include "library_call.h"
#include "process_group.h"

namespace torch_collective {
namespace {

std::string listOf(const std::vector<int>& ranks) {
  std::ostringstream text;
  text << "[";
  for (size_t i = 0; i < ranks.size(); ++i) text << (i ? ", " : "") << ranks[i];
  return text.str() + "]";
}

}  // namespace

void ProcessGroupCollective::revoke() { checkResult(collCommRevoke(comm_.handle())); }

std::vector<int> ProcessGroupCollective::prepareShrink(const std::vector<int64_t>& exclude, bool abortFirst) {
  std::vector<int> ranks;
  for (int64_t r : exclude) {
    TORCH_CHECK(r >= 0 && r < getSize(), "collective backend: shrink: rank ", r, " is out of range: expected 0 <= rank < ",
                getSize());
    ranks.push_back(static_cast<int>(r));
  }
  // Revoking first ends a call that still waits for the lost rank, on this rank and every other,
  // so that the shrink queued behind it can run.
  if (abortFirst) revoke();
  auto result = std::make_shared<std::pair<collComm_t, std::vector<int>>>(nullptr, std::vector<int>());
  collComm_t comm = comm_.handle();
  const int flags = abortFirst ? COLL_SHRINK_ABORT : COLL_SHRINK_DEFAULT;
  // Behind this group's queued calls, as every call on the communicator.
  c10::intrusive_ptr<c10d::Work> work = enqueue(c10d::OpType::UNKNOWN, {}, {}, nullptr, [=] {
    checkResult(collCommShrink(comm, ranks.data(), static_cast<int>(ranks.size()), &result->first, nullptr, flags));
    int count = 0;
    checkResult(collCommExcludedRanks(result->first, nullptr, 0, &count));
    result->second.resize(count);
    checkResult(collCommExcludedRanks(result->first, result->second.data(), count, &count));
  });
  work->wait();
  std::lock_guard<std::mutex> lock(shrinkMutex_);
  const uint64_t generation = ++shrinks_;
  auto store = store_ ? c10::make_intrusive<c10d::PrefixStore>("torch_collective/shrink" + std::to_string(generation),
                                                               store_)
                      : c10::intrusive_ptr<c10d::PrefixStore>();
  shrunk_ = c10::make_intrusive<ProcessGroupCollective>(result->first, comm_.timeoutMs(), store);
  shrunkWithout_ = result->second;
  return shrunkWithout_;
}

c10::intrusive_ptr<ProcessGroupCollective> ProcessGroupCollective::takeShrunk(const std::vector<int64_t>& exclude) {
  std::vector<int> asked(exclude.begin(), exclude.end());
  std::sort(asked.begin(), asked.end());
  std::lock_guard<std::mutex> lock(shrinkMutex_);
  TORCH_CHECK(shrunk_, "collective backend: no shrink of this group is ready to hand over");
  TORCH_CHECK(asked == shrunkWithout_, "collective backend: shrink: the survivors agreed to leave out ranks ",
              listOf(shrunkWithout_), ", not ", listOf(asked),
              ": ask again with that list (torch_collective.shrink_group does); the new group is kept until then");
  auto handed = std::move(shrunk_);
  shrunk_.reset();
  shrunkWithout_.clear();
  return handed;
}

#if TORCH_COLLECTIVE_HAS_SPLIT_AND_ABORT
c10::intrusive_ptr<c10d::Backend> ProcessGroupCollective::shrink(const std::vector<int64_t>& ranksToExclude,
                                                                 int shrinkFlags,
                                                                 const c10::intrusive_ptr<Options>& /*optsOverride*/) {
  std::vector<int> asked(ranksToExclude.begin(), ranksToExclude.end());
  std::sort(asked.begin(), asked.end());
  bool prepared = false;
  {
    std::lock_guard<std::mutex> lock(shrinkMutex_);
    prepared = shrunk_ && shrunkWithout_ == asked;
  }
  // torch's SHRINK_ABORT (1) is the library's COLL_SHRINK_ABORT: revoke first.
  if (!prepared) prepareShrink(ranksToExclude, shrinkFlags != 0);
  return takeShrunk(ranksToExclude);
}
#endif

}  // namespace torch_collective
