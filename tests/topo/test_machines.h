// Hand-built topologies for the binding rules: machines no CI host is.
#pragma once

#include "topo/topology.h"

namespace coll {
namespace topo {
namespace testing {

// Two sockets, one NUMA node each, 4 cores of 2 hardware threads per socket, numbered as
// Linux numbers them: socket 0 has cores {0,8} {1,9} {2,10} {3,11} (node 0: 0-3,8-11), socket 1
// {4,12} .. {7,15} (node 1). `gpusPerSocket` NVIDIA GPUs on each socket (GPU0, GPU1 on node 0
// when 2), an InfiniBand NIC per socket when `nics` (ib0 on node 0, ib1 on node 1), and the
// virtual interfaces lo and docker0.
Topology twoSocketMachine(int gpusPerSocket, bool nics);

// One socket, one node, `cores` cores without SMT, nothing on PCI.
Topology laptop(int cores);

}  // namespace testing
}  // namespace topo
}  // namespace coll
