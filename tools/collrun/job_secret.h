// The secret that lets only this job's ranks join its rendezvous (COLL_STORE_SECRET; see
// docs/security.md): made up for a single-node job, and for a multi-node job taken from the
// environment or a file every node reads, since every node's collrun must pass the same one.
#pragma once

#include <string>

#include "options.h"

namespace collrun {

// 32 random bytes as 64 hex digits (from getrandom; empty on failure).
std::string randomHexSecret();

// What the ranks get as COLL_STORE_SECRET: "" when they inherit it from collrun's environment
// (or run without one). Returns false, after printing why, when a multi-node job has none:
// --secret-file FILE, COLL_STORE_SECRET in the environment, or COLL_STORE_ALLOW_NO_SECRET=1.
bool chooseJobSecret(const Options& opts, std::string* secret);

}  // namespace collrun
