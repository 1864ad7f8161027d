// How the survivors of a communicator agree on who is gone, so that two survivors that saw
// different failures never build different communicators. Over one store (the meeting point,
// meeting_point.h), with a deadline:
//
//   1. Each survivor posts its view: the ranks it excludes (the caller's list, and peers whose
//      process it saw exit).
//   2. It reads the others' views as they come and takes the union. A rank it does not exclude
//      and that posts nothing within `patience` is excluded too (dead on another host, stopped, or
//      not shrinking); a rank whose process exits meanwhile is excluded at once.
//   3. Once every rank it does not exclude has posted, it bids to decide (an atomic counter on the
//      store): the first bidder writes its union as the decision. Every survivor, that bidder
//      included, then reads the one decision and builds the communicator of the ranks it leaves.
//
// Every rank that ends up a member posted a view that the decider read (the decider waited for
// it), so the decision holds every member's exclusions. A rank that the decision excludes, though
// it is alive and shrinking, gets collRemoteError saying so. Keys: view/<k>, posted, decider,
// decision, under the caller's prefix (fresh per shrink).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "common/clock.h"

namespace coll {
namespace ft {

struct AgreementInput {
  int rank = 0;
  int nranks = 1;
  std::vector<int> excluded;           // what this rank excludes to start with
  std::function<bool(int)> gone;       // a rank whose process is known to have exited
  std::function<bool()> toldExcluded;  // the survivors already decided without this rank (may be empty)
  std::chrono::milliseconds patience;  // how long a silent rank is waited for
  Deadline deadline;                   // the whole agreement
};

// The agreed excluded ranks, ascending. Throws collRemoteError when the decision excludes this
// rank, collTimeout at the deadline (the decider failed before writing the decision).
std::vector<int> agreeOnExcluded(bootstrap::Store& store, const AgreementInput& input);

// "2,5,7" and back; parseRankList throws collRemoteError for a malformed list or a rank outside
// [0, nranks).
std::string formatRankList(const std::vector<int>& ranks);
std::vector<int> parseRankList(const std::string& text, int nranks, const char* what);

}  // namespace ft
}  // namespace coll
