// colltopo's view of this host: the topology topo/ discovers, and this process's binding.
#pragma once

#include "topo/topology.h"

namespace colltopo {

// Prints this host's topology to stdout, as text or as one JSON document; returns the exit
// status (1, with a message on stderr, when the requested source is unavailable).
int printLocalView(bool json, coll::topo::TopologySource source);

}  // namespace colltopo
