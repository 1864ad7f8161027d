// collGroupStart/collGroupEnd: calls made between them on this thread are queued and issued
// together at the outermost GroupEnd. The nesting depth and the queue are per thread, the only
// process-wide state of the API besides the parameter cache.
#pragma once

#include "src/coll_call.h"

namespace coll {

class Communicator;

void groupStart();
// Inside a group, queues the call (and its stream: NULL for host memory) for GroupEnd and returns
// true; outside one, returns false and the caller runs the call. One function for both, since the
// queue is thread-local and every lookup of it shows on an 8-byte send. A variable-count call is
// queued with copies of its count arrays, since the caller's may be gone or changed by
// collGroupEnd.
bool groupEnqueueIfOpen(Communicator* comm, const CollCall& call, collStream_t stream);
// Leaves one level; at the outermost level runs the queued calls (throws the first error).
void groupEnd();
// Whether this thread is between collGroupStart and its collGroupEnd.
bool groupIsOpen();

}  // namespace coll
