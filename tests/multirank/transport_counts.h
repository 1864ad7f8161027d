// What a rank's transports counted (Communicator::transportUsage(), transport/domain.h), for the
// tests that check which path a call took.
#pragma once

#include <cstdint>
#include <string>

#include "collective.h"
#include "src/api_internal.h"
#include "src/comm.h"

namespace colltest {

// The count named `what` ("slices received in place", "single-copy reads", ...) summed over the
// rank's transport domains; 0 where none keeps it.
inline uint64_t transportCount(collComm_t comm, const std::string& what) {
  uint64_t total = 0;
  for (const auto& [name, usage] : coll::communicatorOf(comm)->transportUsage())
    for (const auto& [counted, count] : usage.counts)
      if (counted == what) total += count;
  return total;
}

}  // namespace colltest
