// Turns libcollective's result codes into C++ exceptions that reach Python as RuntimeError.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include "collective.h"

namespace torch_collective {

// A libcollective call that failed. The message is the library's own (collGetLastError), which
// names the function, the value and what was expected, followed by the result code's name in
// brackets, e.g. "... [collTimeout]".
class CollectiveError : public std::runtime_error {
 public:
  CollectiveError(collResult_t code, const std::string& message);
  collResult_t code() const { return code_; }

 private:
  collResult_t code_;
};

// Throws CollectiveError unless result is collSuccess. Must run on the thread that made the call:
// the library keeps the last error per thread.
void checkResult(collResult_t result);

// Runs `issueCalls` (point-to-point library calls) between collGroupStart and collGroupEnd, so
// that they progress together; the group is closed on this thread whatever happens inside.
void runAsGroup(const std::function<void()>& issueCalls);

}  // namespace torch_collective
