// The C entry points for surviving a lost rank (revoke, shrink, grow) and for the flight recorder,
// with the same boundary as every other entry point (api.cc): arguments checked first, every
// exception turned into a collResult_t and this thread's last error.
#include <string>
#include <vector>

#include "collective.h"
#include "common/error.h"
#include "src/api_handles.h"
#include "src/api_internal.h"
#include "src/comm.h"

namespace {

constexpr int kMaxRanks = 1 << 15;

std::vector<int> excludeListOf(const int* list, int count, int nranks) {
  if (count < 0)
    coll::throwError(collInvalidArgument, "collCommShrink: excludeRanksCount %d: expected 0 or more", count);
  if (count > 0 && list == nullptr)
    coll::throwError(collInvalidArgument, "collCommShrink: excludeRanksList is NULL with excludeRanksCount %d", count);
  std::vector<int> ranks;
  for (int i = 0; i < count; ++i) {
    if (list[i] < 0 || list[i] >= nranks)
      coll::throwError(collInvalidArgument,
                       "collCommShrink: excludeRanksList[%d] is %d: expected a rank of the communicator, in [0, %d)", i,
                       list[i], nranks);
    ranks.push_back(list[i]);
  }
  return ranks;
}

// The grown communicator, unless its ranks are out of place: then it is destroyed and NULL.
void checkGrowthOrDestroy(collComm_t* newcomm, bool existing, int oldSize) {
  try {
    coll::liveCommunicator(*newcomm, "collCommGrow").checkGrowth(existing, oldSize);
  } catch (...) {
    collCommDestroy(*newcomm);
    *newcomm = nullptr;
    throw;
  }
}

}  // namespace

COLL_API collResult_t collCommRevoke(collComm_t comm) {
  return coll::guardedCall("collCommRevoke", [&] { coll::liveCommunicator(comm, "collCommRevoke").revoke(); });
}

COLL_API collResult_t collCommShrink(collComm_t comm, const int* excludeRanksList, int excludeRanksCount,
                                     collComm_t* newcomm, collConfig_t* config, int shrinkFlags) {
  return coll::guardedCall("collCommShrink", [&] {
    coll::Communicator& parent = coll::liveCommunicator(comm, "collCommShrink");
    if (newcomm == nullptr) coll::throwError(collInvalidArgument, "collCommShrink: newcomm is NULL");
    if (shrinkFlags != COLL_SHRINK_DEFAULT && shrinkFlags != COLL_SHRINK_ABORT)
      coll::throwError(collInvalidArgument,
                       "collCommShrink: shrinkFlags %d: expected COLL_SHRINK_DEFAULT (0) or COLL_SHRINK_ABORT (1)",
                       shrinkFlags);
    const std::vector<int> exclude = excludeListOf(excludeRanksList, excludeRanksCount, parent.nranks());
    // Without a config the new communicator inherits the parent's settings, as split's does.
    const coll::CommOptions options = config ? coll::optionsFromConfig(config, "collCommShrink") : parent.options();
    *newcomm = nullptr;
    *newcomm = coll::handleFor(parent.shrink(exclude, shrinkFlags == COLL_SHRINK_ABORT, options));
  });
}

COLL_API collResult_t collCommExcludedRanks(const collComm_t comm, int* ranks, int capacity, int* count) {
  return coll::guardedCall("collCommExcludedRanks", [&] {
    const coll::Communicator& c = coll::liveCommunicator(comm, "collCommExcludedRanks");
    if (count == nullptr) coll::throwError(collInvalidArgument, "collCommExcludedRanks: count is NULL");
    if (capacity < 0 || (capacity > 0 && ranks == nullptr))
      coll::throwError(collInvalidArgument, "collCommExcludedRanks: ranks %p with capacity %d: expected room for them",
                       static_cast<void*>(ranks), capacity);
    const std::vector<int>& excluded = c.excludedFromParent();
    *count = static_cast<int>(excluded.size());
    for (int i = 0; i < capacity && i < *count; ++i) ranks[i] = excluded[i];
  });
}

COLL_API collResult_t collCommGrow(collComm_t comm, int nranks, const collUniqueId* uniqueId, int rank,
                                   collComm_t* newcomm, collConfig_t* config) {
  return coll::guardedCall("collCommGrow", [&] {
    if (newcomm == nullptr) coll::throwError(collInvalidArgument, "collCommGrow: newcomm is NULL");
    if (nranks < 1 || nranks > kMaxRanks)
      coll::throwError(collInvalidArgument, "collCommGrow: nranks %d: expected 1 to %d", nranks, kMaxRanks);
    *newcomm = nullptr;
    if (comm == nullptr) {  // a new rank
      if (uniqueId == nullptr)
        coll::throwError(collInvalidArgument, "collCommGrow: uniqueId is NULL on a new rank (comm NULL)");
      if (rank < 0 || rank >= nranks)
        coll::throwError(collInvalidArgument, "collCommGrow: rank %d of a new rank: expected one in [1, %d)", rank,
                         nranks);
      coll::initFromUniqueId(newcomm, nranks, *uniqueId, rank, coll::optionsFromConfig(config, "collCommGrow"));
      checkGrowthOrDestroy(newcomm, false, 0);
      return;
    }
    coll::Communicator& existing = coll::liveCommunicator(comm, "collCommGrow");
    if (rank != -1)
      coll::throwError(collInvalidArgument, "collCommGrow: rank %d on an existing rank: expected -1 (it keeps rank %d)",
                       rank, existing.rank());
    if (nranks <= existing.nranks())
      coll::throwError(collInvalidArgument, "collCommGrow: nranks %d: expected more than the existing %d", nranks,
                       existing.nranks());
    const coll::CommOptions options = config ? coll::optionsFromConfig(config, "collCommGrow") : existing.options();
    const collUniqueId id = existing.shareGrowId(uniqueId);
    const int oldSize = existing.nranks();
    coll::initFromUniqueId(newcomm, nranks, id, existing.rank(), options);
    checkGrowthOrDestroy(newcomm, true, oldSize);
  });
}

COLL_API collResult_t collCommDumpTrace(collComm_t comm, const char* path) {
  return coll::guardedCall("collCommDumpTrace", [&] {
    coll::Communicator& c = coll::liveCommunicator(comm, "collCommDumpTrace");
    if (!c.recorder().enabled())
      coll::throwError(collInvalidUsage, "collCommDumpTrace: the flight recorder is off (COLL_TRACE_BUFFER=0)");
    c.dumpTrace("api", path != nullptr ? path : "");
  });
}
