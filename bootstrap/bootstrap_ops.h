// Collectives over a Store, for init and split, before any transport exists. They are slow
// (every byte goes through the rendezvous server) and meant for small blobs: addresses,
// connection descriptors, host hashes.
#pragma once

#include <string>
#include <vector>

#include "bootstrap/store.h"

namespace coll {
namespace bootstrap {

// Every rank contributes `mine`; returns all contributions indexed by rank. `tag` must be fresh
// for each call on a store (e.g. "init/0", "split/3"): it names the keys, and a reused tag would
// return the previous call's values.
std::vector<Bytes> allGather(Store& store, const std::string& tag, int rank, int nranks, const Bytes& mine,
                             Deadline deadline);

// Returns once all nranks ranks have entered a barrier with this tag. Same tag rule as allGather.
void barrier(Store& store, const std::string& tag, int rank, int nranks, Deadline deadline);

}  // namespace bootstrap
}  // namespace coll
