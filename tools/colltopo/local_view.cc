#include "local_view.h"

#include <cstdio>

#include "topo/topology_render.h"

namespace colltopo {

int printLocalView(bool json, coll::topo::TopologySource source) {
  if (source == coll::topo::TopologySource::kHwloc && !coll::topo::haveHwloc()) {
    fprintf(stderr, "colltopo: --source hwloc: this build has no hwloc (configure with libhwloc-dev installed)\n");
    return 1;
  }
  coll::topo::Topology topology = coll::topo::discoverTopology(source);
  if (topology.source.empty()) {
    fprintf(stderr, "colltopo: hwloc could not load this host's topology; try --source sysfs\n");
    return 1;
  }
  std::string text = json ? coll::topo::topologyJson(topology) : coll::topo::topologyText(topology);
  fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace colltopo
