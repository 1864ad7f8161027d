// SIGUSR1 as a request to dump every communicator's flight recorder (COLL_TRACE_DUMP_ON=signal).
// The handler only counts (an atomic add is all a signal handler may safely do here); each
// communicator's watcher sees the count change within about a second and dumps from its own
// thread. A handler the program had installed before runs as well. This counter and the saved
// handler are the process-wide state the feature needs.
#pragma once

#include <cstdint>

namespace coll {
namespace trace {

// Installs the handler once per process; later calls do nothing.
void installDumpSignal();
// How many SIGUSR1s arrived since the handler was installed.
uint64_t dumpSignalCount();

}  // namespace trace
}  // namespace coll
