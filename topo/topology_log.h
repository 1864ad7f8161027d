// The communicator's view of topo/: one call at init that logs what this host looks like.
#pragma once

namespace coll {
namespace topo {

// Logs a one-line summary of this host's topology at INFO (subsystem INIT; COLL_DEBUG=INFO), and
// the full description at TRACE. Discovery (tens of milliseconds with hwloc's PCI scan) only
// runs when one of those levels is enabled, so by default this costs nothing. Never throws.
void logLocalTopology();

}  // namespace topo
}  // namespace coll
