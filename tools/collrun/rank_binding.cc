#include "rank_binding.h"

#include <cstdio>
#include <cstdlib>

#include "src/topo/binding.h"
#include "src/topo/topology.h"

namespace collrun {

namespace {

coll::topo::BindMode modeOf(Binding bind) {
  switch (bind) {
    case Binding::kCore:
      return coll::topo::BindMode::kCore;
    case Binding::kNuma:
      return coll::topo::BindMode::kNuma;
    case Binding::kNone:
      break;
  }
  return coll::topo::BindMode::kNone;
}

std::string jobInterface(const coll::topo::Topology& topology, const Options& opts) {
  const char* spec = getenv("COLL_SOCKET_IFNAME");
  if (spec != nullptr && *spec != '\0') return coll::topo::interfaceMatching(topology.interfaces, spec);
  return coll::topo::interfaceReaching(topology.interfaces, opts.masterAddr);
}

}  // namespace

std::vector<RankBinding> bindingsForRanks(const Options& opts) {
  if (opts.bind == Binding::kNone) return {};
  coll::topo::Topology topology = coll::topo::discoverTopology();
  if (topology.processCpus.empty()) {
    fprintf(stderr, "collrun: warning: cannot read collrun's own CPU affinity; not binding\n");
    return {};
  }
  coll::topo::BindRequest request;
  request.mode = modeOf(opts.bind);
  request.localRanks = opts.nprocs;
  request.allowed = topology.processCpus;
  request.nicName = jobInterface(topology, opts);
  std::vector<RankBinding> bindings(static_cast<size_t>(opts.nprocs));
  for (int local = 0; local < opts.nprocs; ++local) {
    request.localRank = local;
    coll::topo::BindChoice choice = coll::topo::chooseBinding(topology, request);
    RankBinding& binding = bindings[static_cast<size_t>(local)];
    binding.bound = !choice.cpus.empty();
    binding.cpus = coll::topo::cpuSetFromList(choice.cpus);
    binding.description = binding.bound
                              ? "bound to cpus " + coll::topo::formatCpuList(choice.cpus) + " (" + choice.reason + ")"
                              : "not bound (no usable CPUs found)";
  }
  return bindings;
}

}  // namespace collrun
