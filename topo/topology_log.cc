#include "topo/topology_log.h"

#include <sstream>
#include <string>

#include "common/logging.h"
#include "topo/topology.h"
#include "topo/topology_render.h"

namespace coll {
namespace topo {

void logLocalTopology() {
  bool info = logEnabled(LogLevel::kInfo, LogSubsys::kInit);
  bool trace = logEnabled(LogLevel::kTrace, LogSubsys::kInit);
  if (!info && !trace) return;
  try {
    Topology topology = discoverTopology();
    COLL_INFO(kInit, "topology: %s", topologySummary(topology).c_str());
    if (!trace) return;
    std::istringstream lines(topologyText(topology));
    for (std::string line; std::getline(lines, line);) COLL_TRACE(kInit, "topology: %s", line.c_str());
  } catch (const std::exception& e) {  // logging must never fail an init
    COLL_WARN(kInit, "topology discovery failed: %s", e.what());
  }
}

}  // namespace topo
}  // namespace coll
