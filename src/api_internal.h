// C++ entry points beside the C API, for tests and for layers built on the library (the PyTorch
// backend): build a communicator on a Store the caller already has, e.g. a MemoryStore shared by
// ranks that are threads of one process.
#pragma once

#include <functional>
#include <memory>

#include "collective.h"

// Marks a C entry point: C linkage, exported from the shared library (which hides the rest).
#define COLL_API extern "C" __attribute__((visibility("default")))

namespace coll {

namespace bootstrap {
class Store;
}  // namespace bootstrap
class Communicator;
// The communicator behind a live handle, or nullptr (for tools such as colltopo).
Communicator* communicatorOf(collComm_t comm);

// Collective over the nranks callers that share `store`; returns collResult_t like the C API and
// sets the last error on failure. config may be NULL.
collResult_t commInitWithStore(collComm_t* comm, std::shared_ptr<bootstrap::Store> store, int nranks, int rank,
                               const collConfig_t* config);

// Runs `body` the way every C entry point does: a CollError becomes its code and this thread's
// last error (prefixed with `function` unless it already starts with it); any other exception
// becomes collInternalError or collSystemError. For entry points outside api.cc (zero/).
collResult_t guardedCall(const char* function, const std::function<void()>& body);

}  // namespace coll
