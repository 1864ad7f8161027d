// The C entry point of the flight recorder's dump, with the same boundary as every other entry
// point (api.cc): arguments checked first, every exception turned into a collResult_t and this
// thread's last error.
#include "collective.h"
#include "common/error.h"
#include "src/api_handles.h"
#include "src/api_internal.h"
#include "src/comm.h"

COLL_API collResult_t collCommDumpTrace(collComm_t comm, const char* path) {
  return coll::guardedCall("collCommDumpTrace", [&] {
    coll::Communicator& c = coll::liveCommunicator(comm, "collCommDumpTrace");
    if (!c.recorder().enabled())
      coll::throwError(collInvalidUsage, "collCommDumpTrace: the flight recorder is off (COLL_TRACE_BUFFER=0)");
    c.dumpTrace("api", path != nullptr ? path : "");
  });
}
