// Logging controlled by COLL_DEBUG (NONE, WARN, INFO, TRACE) and COLL_DEBUG_SUBSYS (comma list of
// INIT, COLL, TRANSPORT, BOOTSTRAP, PLAN, ALL; ^ excludes). Lines go to stderr prefixed with host,
// pid and rank when known, so interleaved output from several ranks stays readable.
#pragma once

namespace coll {

enum class LogLevel { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };
enum class LogSubsys : unsigned { kInit = 1, kColl = 2, kTransport = 4, kBootstrap = 8, kPlan = 16 };

struct LogSettings {
  LogLevel level = LogLevel::kWarn;
  unsigned subsysMask = ~0u;
};
// COLL_DEBUG and COLL_DEBUG_SUBSYS as read (logging.cc).
LogSettings readLogSettings();

// Inline: the hot paths' COLL_TRACE asks this on every call, and the answer is two loads once
// the variables have been read (once per process).
inline bool logEnabled(LogLevel level, LogSubsys subsys) {
  static const LogSettings settings = readLogSettings();
  return level <= settings.level && (settings.subsysMask & static_cast<unsigned>(subsys)) != 0;
}
void logMessage(LogLevel level, LogSubsys subsys, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

}  // namespace coll

#define COLL_WARN(subsys, ...) ::coll::logMessage(::coll::LogLevel::kWarn, ::coll::LogSubsys::subsys, __VA_ARGS__)
#define COLL_INFO(subsys, ...)                                                             \
  do {                                                                                     \
    if (::coll::logEnabled(::coll::LogLevel::kInfo, ::coll::LogSubsys::subsys))            \
      ::coll::logMessage(::coll::LogLevel::kInfo, ::coll::LogSubsys::subsys, __VA_ARGS__); \
  } while (0)
#define COLL_TRACE(subsys, ...)                                                             \
  do {                                                                                      \
    if (::coll::logEnabled(::coll::LogLevel::kTrace, ::coll::LogSubsys::subsys))            \
      ::coll::logMessage(::coll::LogLevel::kTrace, ::coll::LogSubsys::subsys, __VA_ARGS__); \
  } while (0)
