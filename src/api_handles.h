// What api.cc keeps that entry points in other files need (api_ft.cc): the communicator behind a
// handle, a config's options, a handle for a new communicator, and init from a unique id.
#pragma once

#include <memory>

#include "collective.h"
#include "src/comm.h"

namespace coll {

// Throws collInvalidArgument naming `function` for a NULL, destroyed or foreign handle; makes the
// communicator the one this call's last error concerns.
Communicator& liveCommunicator(collComm_t comm, const char* function);
// A config's settings (NULL: the defaults); throws collInvalidArgument naming `function`.
CommOptions optionsFromConfig(const collConfig_t* config, const char* function);
collComm_t handleFor(std::unique_ptr<Communicator> impl);
// collCommInitRankConfig's body: collective over the nranks callers of the id.
void initFromUniqueId(collComm_t* comm, int nranks, const collUniqueId& id, int rank, const CommOptions& options);

}  // namespace coll
