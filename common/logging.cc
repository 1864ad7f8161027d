#include "common/logging.h"

#include <unistd.h>

#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/error.h"
#include "common/list_spec.h"

namespace coll {
namespace {

LogLevel parseLevel(const char* text) {
  if (text == nullptr) return LogLevel::kWarn;
  if (strcasecmp(text, "NONE") == 0) return LogLevel::kNone;
  if (strcasecmp(text, "INFO") == 0) return LogLevel::kInfo;
  if (strcasecmp(text, "TRACE") == 0) return LogLevel::kTrace;
  return LogLevel::kWarn;
}

unsigned subsysBit(const std::string& name) {
  if (name == "INIT") return static_cast<unsigned>(LogSubsys::kInit);
  if (name == "COLL") return static_cast<unsigned>(LogSubsys::kColl);
  if (name == "TRANSPORT" || name == "NET" || name == "SHM") return static_cast<unsigned>(LogSubsys::kTransport);
  if (name == "BOOTSTRAP") return static_cast<unsigned>(LogSubsys::kBootstrap);
  if (name == "PLAN" || name == "TUNING") return static_cast<unsigned>(LogSubsys::kPlan);
  if (name == "ALL") return ~0u;
  return 0;
}

unsigned parseSubsys(const char* text) {
  if (text == nullptr || *text == '\0') return ~0u;
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  NameSelection selection = NameSelection::parse(upper);
  unsigned mask = 0;
  for (const std::string& name : selection.names()) mask |= subsysBit(name);
  return selection.excludes() ? ~mask : mask;
}

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kTrace:
      return "TRACE";
    default:
      return "";
  }
}

}  // namespace

LogSettings readLogSettings() {
  LogSettings s;
  s.level = parseLevel(getenv("COLL_DEBUG"));
  s.subsysMask = parseSubsys(getenv("COLL_DEBUG_SUBSYS"));
  return s;
}

void logMessage(LogLevel level, LogSubsys subsys, const char* fmt, ...) {
  if (!logEnabled(level, subsys)) return;
  char host[64] = "?";
  gethostname(host, sizeof(host) - 1);
  va_list args;
  va_start(args, fmt);
  std::string body = formatStringV(fmt, args);
  va_end(args);
  // One fprintf per line so lines from several threads do not interleave mid-line.
  fprintf(stderr, "%s:%d [coll %s] %s\n", host, static_cast<int>(getpid()), levelName(level), body.c_str());
}

}  // namespace coll
