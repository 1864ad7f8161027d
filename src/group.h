// collGroupStart/collGroupEnd: calls made between them on this thread are queued and issued
// together at the outermost GroupEnd. The nesting depth and the queue are per thread, the only
// process-wide state of the API besides the parameter cache.
#pragma once

#include <functional>

#include "src/coll_call.h"

namespace coll {

class Communicator;

bool groupActive();
void groupStart();
// Queues a call (and its stream: NULL for host memory) for GroupEnd.
void groupEnqueue(Communicator* comm, const CollCall& call, collStream_t stream);
// Leaves one level; at the outermost level runs the queued calls (throws the first error).
void groupEnd();

}  // namespace coll
