#include "bootstrap/bootstrap_ops.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"

namespace coll {
namespace bootstrap {

namespace {

void checkRank(const char* function, const std::string& tag, int rank, int nranks) {
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    throwError(collInvalidArgument, "bootstrap %s('%s'): rank %d is outside [0, nranks=%d)", function, tag.c_str(),
               rank, nranks);
  }
}

const char kDepartedKey[] = "departed";

std::string departedKeyOf(int rank) { return std::string(kDepartedKey) + "/" + std::to_string(rank); }

// Throws collRemoteError naming the departed rank (whose notice is under `key`); `when` ends the
// sentence ("before this step was done").
[[noreturn]] void throwDeparted(Store& store, const std::string& key, const std::string& during, const char* when,
                                Deadline deadline) {
  const Bytes who = store.get(key, deadline);
  // The notice came from another process through the store: shown as bounded text only.
  throwError(collRemoteError,
             "%s: %.*s lost its connection to the rendezvous store (it exited, crashed or lost the network) %s",
             during.c_str(), static_cast<int>(std::min<size_t>(who.size(), 256)),
             reinterpret_cast<const char*>(who.data()), when);
}

[[noreturn]] void throwDeparted(Store& store, const std::string& during, Deadline deadline) {
  throwDeparted(store, kDepartedKey, during, "before this step was done", deadline);
}

// Runs `wait` (a store get or wait until the given deadline) in slices, checking between them
// whether a rank has departed. Returns wait's result.
template <class Wait>
auto waitUnlessDeparted(Store& store, const char* function, const std::string& tag, Deadline deadline, Wait wait) {
  for (;;) {
    const Deadline slice = std::min(deadline, Clock::now() + kDepartureCheckInterval);
    try {
      return wait(slice);
    } catch (const CollError& e) {
      if (e.code() != collTimeout || Clock::now() >= deadline) throw;
    }
    if (store.check({kDepartedKey})) {
      // A rank that finished this step and then exited may be what departed: what this rank
      // waits for may already be there.
      try {
        return wait(Clock::now());
      } catch (const CollError& e) {
        if (e.code() != collTimeout) throw;
      }
      throwDeparted(store, formatString("bootstrap %s('%s')", function, tag.c_str()), deadline);
    }
  }
}

}  // namespace

void throwIfARankDeparted(Store& store, const std::string& during, Deadline deadline) {
  if (store.check({kDepartedKey})) throwDeparted(store, during, deadline);
}

void throwIfAnyOfDeparted(Store& store, const std::vector<int>& ranks, const std::string& during, Deadline deadline) {
  for (int rank : ranks) {
    const std::string key = departedKeyOf(rank);
    if (store.check({key})) throwDeparted(store, key, during, "while this rank waited for it", deadline);
  }
}

void throwIfARankDepartsBy(Store& store, const std::string& during, Deadline until, Deadline deadline) {
  try {
    store.wait({kDepartedKey}, std::min(until, deadline));
  } catch (const CollError& e) {
    if (e.code() != collTimeout) throw;
    return;
  }
  throwDeparted(store, during, deadline);
}

Bytes getUnlessDeparted(Store& store, const std::string& key, const char* function, const std::string& tag,
                        Deadline deadline) {
  return waitUnlessDeparted(store, function, tag, deadline, [&](Deadline until) { return store.get(key, until); });
}

void announceDepartureOnClose(Store& store, const std::string& what, int rank) {
  store.setOnDisconnect(kDepartedKey, Bytes(what.begin(), what.end()));
  store.setOnDisconnect(departedKeyOf(rank), Bytes(what.begin(), what.end()));
}

std::vector<Bytes> allGather(Store& store, const std::string& tag, int rank, int nranks, const Bytes& mine,
                             Deadline deadline) {
  checkRank("allGather", tag, rank, nranks);
  const std::string prefix = tag + "/ag/";
  store.set(prefix + std::to_string(rank), mine);
  std::vector<Bytes> all(static_cast<size_t>(nranks));
  // One get per peer; each blocks server-side until that peer has set its key (or a slice of the
  // wait ends, to look for a departure).
  for (int r = 0; r < nranks; ++r) {
    if (r == rank) {
      all[static_cast<size_t>(r)] = mine;
      continue;
    }
    const std::string key = prefix + std::to_string(r);
    all[static_cast<size_t>(r)] = getUnlessDeparted(store, key, "allGather", tag, deadline);
  }
  return all;
}

void barrier(Store& store, const std::string& tag, int rank, int nranks, Deadline deadline) {
  checkRank("barrier", tag, rank, nranks);
  // The last rank to arrive publishes a release key that everyone waits for: nranks adds, one
  // set and nranks waits, whatever the arrival order.
  const std::string release = tag + "/barrier/release";
  if (store.add(tag + "/barrier/arrived", 1) == nranks) store.set(release, Bytes{1});
  waitUnlessDeparted(store, "barrier", tag, deadline, [&](Deadline until) {
    store.wait({release}, until);
    return 0;
  });
}

}  // namespace bootstrap
}  // namespace coll
