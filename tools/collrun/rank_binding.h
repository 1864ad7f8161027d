// --bind: the CPUs each local rank is pinned to, chosen from this host's topology (near the
// rank's GPU, else near the job's NIC, else round-robin; topo/binding.h has the rules).
#pragma once

#include <sched.h>

#include <string>
#include <vector>

#include "options.h"

namespace collrun {

struct RankBinding {
  bool bound = false;  // false: leave the rank's affinity alone
  cpu_set_t cpus;
  std::string description;  // "bound to cpus 1 (core, near GPU0 ...)", for stderr
};

// One entry per local rank, or none when --bind is none or nothing can be chosen (a warning
// says why). The NIC is the interface COLL_SOCKET_IFNAME selects, else the one that routes
// to --master-addr.
std::vector<RankBinding> bindingsForRanks(const Options& opts);

}  // namespace collrun
