// Where a launcher should pin a local rank: near the GPU it will use, else near the NIC the job
// talks through, else round-robin. A pure function of a Topology, so that the rules can be
// tested with hand-built machines (two sockets, GPUs and NICs on each) that no CI host has.
#pragma once

#include <string>

#include "topo/topology.h"

namespace coll {
namespace topo {

enum class BindMode {
  kNone,   // leave the affinity alone
  kCore,   // one core (all its allowed PUs) per rank
  kCores,  // the rank's share of the cores: as many as its place's cores divided by its ranks
  kNuma,   // every allowed CPU of one NUMA node
};

struct BindRequest {
  BindMode mode = BindMode::kNone;
  int localRank = 0;
  int localRanks = 1;
  CpuList allowed;      // CPUs that may be handed out (the launcher's own affinity); empty: all
  std::string nicName;  // the interface the job's traffic uses; "" when unknown
};

struct BindChoice {
  CpuList cpus;        // empty: leave the affinity alone
  int gpuIndex = -1;   // the GPU (index among the topology's GPUs) the rank was placed near
  std::string reason;  // "core, near GPU1 0000:3b:00.0 on NUMA 0", "numa, round-robin", ...
};

// The rules, in order:
//  - GPUs present: local rank i uses GPU (i mod GPUs) and gets that GPU's NUMA node (numa), or
//    a core of that node not given to a lower local rank of the same GPU node (core; wraps
//    around when the node has fewer cores than ranks); with cores, the node's cores are shared
//    out among the ranks whose GPUs are near it, consecutive cores to each.
//  - Else a NIC named by nicName that is a PCI device: every rank prefers its NUMA node; with
//    core (or cores), ranks fill that node's cores first and spill over to the others.
//  - Else round-robin: core i mod cores (cores: the i-th share of them), or NUMA node i mod
//    nodes, counting only nodes and cores with allowed CPUs.
// With cores, a share is at least one core; a single rank gets every allowed core.
// GPUs and NICs whose nearby CPUs are all disallowed are passed over.
BindChoice chooseBinding(const Topology& topology, const BindRequest& request);

// "none", "core", "cores" or "numa".
const char* bindModeName(BindMode mode);

}  // namespace topo
}  // namespace coll
