#include "common/error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace coll {

std::string formatStringV(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int needed = vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (needed < 0) return fmt;
  std::vector<char> buffer(static_cast<size_t>(needed) + 1);
  vsnprintf(buffer.data(), buffer.size(), fmt, args);
  return std::string(buffer.data(), static_cast<size_t>(needed));
}

std::string formatString(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string result = formatStringV(fmt, args);
  va_end(args);
  return result;
}

void throwError(collResult_t code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string message = formatStringV(fmt, args);
  va_end(args);
  throw CollError(code, message);
}

void throwSystemError(const char* what) {
  int savedErrno = errno;
  throw CollError(collSystemError, formatString("%s: %s (errno %d)", what, strerror(savedErrno), savedErrno));
}

}  // namespace coll
