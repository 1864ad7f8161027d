#include "bootstrap/bootstrap_ops.h"

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

}  // namespace

std::vector<Bytes> allGather(Store& store, const std::string& tag, int rank, int nranks, const Bytes& mine,
                             Deadline deadline) {
  checkRank("allGather", tag, rank, nranks);
  const std::string prefix = tag + "/ag/";
  store.set(prefix + std::to_string(rank), mine);
  std::vector<Bytes> all(static_cast<size_t>(nranks));
  // One get per peer; each blocks server-side until that peer has set its key, so no polling.
  for (int r = 0; r < nranks; ++r) {
    all[static_cast<size_t>(r)] = r == rank ? mine : store.get(prefix + std::to_string(r), deadline);
  }
  return all;
}

void barrier(Store& store, const std::string& tag, int rank, int nranks, Deadline deadline) {
  checkRank("barrier", tag, rank, nranks);
  // The last rank to arrive publishes a release key that everyone waits for: nranks adds, one
  // set and nranks waits, whatever the arrival order.
  const std::string release = tag + "/barrier/release";
  if (store.add(tag + "/barrier/arrived", 1) == nranks) store.set(release, Bytes{1});
  store.wait({release}, deadline);
}

}  // namespace bootstrap
}  // namespace coll
