#include "local_view.h"

#include <cstdio>
#include <string>
#include <vector>

#include "topo/gpu_topology.h"
#include "topo/json_writer.h"
#include "topo/topology_render.h"

namespace colltopo {
namespace {

// How the PCI GPUs found connect, from NVML where it loads (with its reason where it does not).
coll::topo::GpuTopology gpuLinks(const coll::topo::Topology& topology) {
  std::vector<std::string> busIds;
  for (const coll::topo::PciDevice* gpu : topology.devicesOfKind(coll::topo::PciKind::kGpu))
    busIds.push_back(gpu->busId);
  coll::topo::NvmlApi api;
  std::string why;
  const bool loaded = !busIds.empty() && coll::topo::loadNvml(&api, &why);
  return coll::topo::describeGpus(busIds, loaded ? &api : nullptr, busIds.empty() ? "no GPU on PCI" : why);
}

}  // namespace

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
  const coll::topo::GpuTopology gpus = gpuLinks(topology);
  if (!json) {
    fputs((coll::topo::topologyText(topology) + coll::topo::gpuLinksText(gpus)).c_str(), stdout);
    return 0;
  }
  coll::topo::JsonWriter writer;
  writer.beginObject();
  coll::topo::writeTopologyMembers(topology, &writer);
  writer.key("gpu_links").beginObject().field("source", gpus.source).key("pairs").beginArray();
  for (size_t a = 0; a < gpus.busIds.size(); ++a)
    for (size_t b = a + 1; b < gpus.busIds.size(); ++b) {
      const coll::topo::GpuLink& link = gpus.links[a][b];
      writer.beginObject(coll::topo::JsonWriter::Layout::kInline).field("a", gpus.busIds[a]).field("b", gpus.busIds[b]);
      writer.field("link", coll::topo::gpuLinkKindName(link.kind)).field("peer_access", link.peerAccess).endObject();
    }
  writer.endArray().endObject().endObject();
  fputs(writer.str().c_str(), stdout);
  return 0;
}

}  // namespace colltopo
