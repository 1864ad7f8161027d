// Collectives over a Store, for init and split, before any transport exists. They are slow
// (every byte goes through the rendezvous server) and meant for small blobs: addresses,
// connection descriptors, host hashes.
#pragma once

#include <chrono>

#include <string>
#include <vector>

#include "bootstrap/store.h"

namespace coll {
namespace bootstrap {

// Tells the store who this rank is, so that the store announces it (under the key "departed")
// if this process's connection closes: every rank's waits below then end within about a second
// with collRemoteError naming it, instead of at their deadline. `what` describes the rank
// ("rank 2 (pid 1234 on node7)"). Call once per communicator, before its first wait.
// The notice also goes under "departed/<rank>", for waits that concern some ranks only.
void announceDepartureOnClose(Store& store, const std::string& what, int rank);

// For a step that waits on something other than the store (transports connecting): throws
// collRemoteError naming the rank when one that called announceDepartureOnClose on this store has
// lost its connection, so the step can stop waiting for it. `during` names the step.
// How often a wait looks up whether a rank has departed: a departure is noticed this late at most.
constexpr auto kDepartureCheckInterval = std::chrono::milliseconds(500);

void throwIfARankDeparted(Store& store, const std::string& during, Deadline deadline);
// The same for the given ranks only: after init a rank that finished and destroyed its
// communicator has departed too, and only the ranks a step waits for can make it wait in vain.
void throwIfAnyOfDeparted(Store& store, const std::vector<int>& ranks, const std::string& during, Deadline deadline);

// Waits until `until` for a departure notice; throws collRemoteError naming the rank when one
// appears, returns when none did. For a step that just saw a peer's connection close: the notice
// says which rank went first (the peer may only have failed because of it).
void throwIfARankDepartsBy(Store& store, const std::string& during, Deadline until, Deadline deadline);

// store.get(key), in slices that look for a departure between them (the waits below all do).
// `function` and `tag` name the step in messages: "bootstrap function('tag')".
Bytes getUnlessDeparted(Store& store, const std::string& key, const char* function, const std::string& tag,
                        Deadline deadline);

// Every rank contributes `mine`; returns all contributions indexed by rank. `tag` must be fresh
// for each call on a store (e.g. "init/0", "split/3"): it names the keys, and a reused tag would
// return the previous call's values.
std::vector<Bytes> allGather(Store& store, const std::string& tag, int rank, int nranks, const Bytes& mine,
                             Deadline deadline);

// Returns once all nranks ranks have entered a barrier with this tag. Same tag rule as allGather.
// Both throw collTimeout at the deadline, and collRemoteError as soon as a rank that called
// announceDepartureOnClose on this store has lost its connection.
void barrier(Store& store, const std::string& tag, int rank, int nranks, Deadline deadline);

}  // namespace bootstrap
}  // namespace coll
