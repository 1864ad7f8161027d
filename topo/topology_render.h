// A Topology as text for people (colltopo, docs), as JSON for programs (colltopo --json), and
// as one summary line for the INFO log.
#pragma once

#include <string>

#include "topo/json_writer.h"
#include "topo/topology.h"

namespace coll {
namespace topo {

std::string topologyText(const Topology& topology);
std::string topologyJson(const Topology& topology);

// The topology as members of the object `json` is inside, so that a larger document (a
// communicator view) can embed it.
void writeTopologyMembers(const Topology& topology, JsonWriter* json);

// "host vm (hwloc): 1 package, 1 NUMA node, 2 cores, 2 PUs; GPUs: none; NICs: eth0 ...".
std::string topologySummary(const Topology& topology);

}  // namespace topo
}  // namespace coll
