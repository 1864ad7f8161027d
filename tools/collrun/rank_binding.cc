#include "rank_binding.h"

#include <cstdio>
#include <cstdlib>

#include "topo/binding.h"
#include "topo/cpu_list.h"
#include "topo/topology.h"

namespace collrun {

namespace {

// Cores with every hardware thread inside `allowed`.
int usableCores(const coll::topo::Topology& topology) {
  int count = 0;
  for (const coll::topo::Core& core : topology.cores)
    count += !core.pus.empty() && coll::topo::containsAllCpus(topology.processCpus, core.pus) ? 1 : 0;
  return count;
}

coll::topo::BindMode modeOf(Binding bind) {
  switch (bind) {
    case Binding::kCore:
      return coll::topo::BindMode::kCore;
    case Binding::kCores:
      return coll::topo::BindMode::kCores;
    case Binding::kNuma:
      return coll::topo::BindMode::kNuma;
    case Binding::kNone:
    case Binding::kAuto:
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
  // Like Open MPI, pin to cores by default when every rank gets one: unpinned ranks that wait by
  // sleeping are woken onto their waker's core and end up sharing one, which measured many times
  // slower beside a background job (docs/performance.md, "Defaults, and the measurement behind
  // each). Each rank gets its share of the cores, not one: the OMP_NUM_THREADS threads collrun
  // gives it (torch's, DeepSpeed's CPU Adam, the ZeRO step's) and its data loader's processes
  // inherit its binding.
  if (opts.bind == Binding::kAuto) {
    if (opts.nprocs > usableCores(topology)) return {};
    request.mode = coll::topo::BindMode::kCores;
  }
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
