#include "library_call.h"

namespace torch_collective {

CollectiveError::CollectiveError(collResult_t code, const std::string& message)
    : std::runtime_error(message), code_(code) {}

namespace {

// The code's name as docs/errors.md lists it, which says more to a reader than its number.
const char* resultName(collResult_t result) {
  static const char* const kNames[] = {"collSuccess",       "collUnhandledCudaError", "collSystemError",
                                       "collInternalError", "collInvalidArgument",    "collInvalidUsage",
                                       "collRemoteError",   "collInProgress",         "collTimeout"};
  int index = static_cast<int>(result);
  return index >= 0 && index < static_cast<int>(sizeof(kNames) / sizeof(kNames[0])) ? kNames[index] : "collResult";
}

}  // namespace

void checkResult(collResult_t result) {
  if (result == collSuccess) return;
  std::string message = collGetLastError(nullptr);
  if (message.empty()) message = collGetErrorString(result);
  // Torch's backends say "Timed out" and programs (torch's own tests among them) match those
  // words with a space on either side; the library's detail follows.
  if (result == collTimeout) message = "collective backend: Timed out waiting for peers: " + message;
  throw CollectiveError(result, message + " [" + resultName(result) + "]");
}

void runAsGroup(const std::function<void()>& issueCalls) {
  checkResult(collGroupStart());
  try {
    issueCalls();
  } catch (...) {
    collGroupEnd();
    throw;
  }
  checkResult(collGroupEnd());
}

}  // namespace torch_collective
