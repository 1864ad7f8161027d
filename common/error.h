// Errors inside the library are C++ exceptions carrying a collResult_t and a message; the C API
// layer (api.cc) catches every one of them, stores the message as this thread's last error and
// returns the code. Nothing throws across the C boundary.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "collective.h"

namespace coll {

class CollError : public std::runtime_error {
 public:
  CollError(collResult_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  collResult_t code() const { return code_; }
  // The communicator the error concerns, where the thrower knows and the catcher does not (a call
  // queued by a group failed at collGroupEnd): its id, or 0.
  uint64_t communicator() const { return communicator_; }
  void setCommunicator(uint64_t id) { communicator_ = id; }

 private:
  collResult_t code_;
  uint64_t communicator_ = 0;
};

// printf-style formatting into a std::string.
std::string formatString(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string formatStringV(const char* fmt, va_list args);

// Throws CollError(code, formatted message). The message names the function, the bad value and
// what was expected.
[[noreturn]] void throwError(collResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Throws collSystemError with strerror(errno) appended; `what` names the failed operation.
[[noreturn]] void throwSystemError(const char* what);

}  // namespace coll

// The source file's name, for messages: the name alone where the compiler offers it, so that a
// message reads the same wherever the sources were built (through ccache, cmake/compiler_cache.cmake,
// __FILE__ would be a path relative to the build folder).
#ifdef __FILE_NAME__
#define COLL_SOURCE_FILE __FILE_NAME__
#else
#define COLL_SOURCE_FILE __FILE__
#endif

// Checks a syscall-style result (-1 on failure) and throws collSystemError naming the call and
// where it started.
#define COLL_SYSCHECK(expr, what)                                               \
  do {                                                                          \
    if ((expr) == -1) ::coll::throwSystemError(what " (" COLL_SOURCE_FILE ")"); \
  } while (0)

// Evaluates a collResult_t-returning expression and throws when it failed.
#define COLL_CHECK_RESULT(expr)                                                                      \
  do {                                                                                               \
    collResult_t collCheckResult_ = (expr);                                                          \
    if (collCheckResult_ != collSuccess)                                                             \
      ::coll::throwError(collCheckResult_, "%s failed at %s:%d", #expr, COLL_SOURCE_FILE, __LINE__); \
  } while (0)
