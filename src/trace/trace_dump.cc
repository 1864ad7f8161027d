#include "src/trace/trace_dump.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "common/error.h"
#include "kernels/cpu/reduce.h"

namespace coll {
namespace trace {
namespace {

constexpr const char* kTitle = "# libcollective flight recorder";
constexpr int kVersion = 1;

int64_t wallNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string encodeName(const std::string& text) {
  if (text.empty()) return "-";
  std::string out;
  for (unsigned char c : text) {
    if (c <= ' ' || c == '%' || c == '=' || c >= 0x7f)
      out += formatString("%%%02x", c);
    else
      out += static_cast<char>(c);
  }
  return out;
}

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string decodeName(const std::string& text) {
  if (text == "-") return "";
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hexDigit(text[i + 1]) >= 0 && hexDigit(text[i + 2]) >= 0) {
      out += static_cast<char>(hexDigit(text[i + 1]) * 16 + hexDigit(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// A coarse monotonic time as wall-clock milliseconds (0 stays 0: not yet).
int64_t wallMsOf(int64_t monotonicNs, int64_t monotonicNow, int64_t wallNow) {
  if (monotonicNs == 0) return 0;
  return (wallNow - (monotonicNow - monotonicNs)) / 1000000;
}

// The fields of one line after its keyword: key=value words.
class Fields {
 public:
  Fields(const std::string& line, int number) : number_(number) {
    std::istringstream words(line);
    std::string word;
    words >> word;  // the keyword
    while (words >> word) {
      const size_t eq = word.find('=');
      if (eq == std::string::npos || eq == 0) fail("a key=value word", word);
      values_[word.substr(0, eq)] = word.substr(eq + 1);
    }
  }
  const std::string& text(const char* key) const {
    auto it = values_.find(key);
    if (it == values_.end()) fail(formatString("the field '%s'", key).c_str(), "nothing");
    return it->second;
  }
  int64_t integer(const char* key) const {
    const std::string& value = text(key);
    char* end = nullptr;
    errno = 0;
    const long long parsed = strtoll(value.c_str(), &end, 10);
    if (errno != 0 || end == value.c_str() || *end != '\0') fail(formatString("an integer for '%s'", key).c_str(), value);
    return parsed;
  }
  uint64_t hex(const char* key) const {
    const std::string& value = text(key);
    char* end = nullptr;
    errno = 0;
    const unsigned long long parsed = strtoull(value.c_str(), &end, 16);
    if (errno != 0 || end == value.c_str() || *end != '\0') fail(formatString("hex digits for '%s'", key).c_str(), value);
    return parsed;
  }

 private:
  [[noreturn]] void fail(const char* expected, const std::string& found) const {
    throwError(collInvalidArgument, "flight recorder trace, line %d: expected %s, found '%s'", number_, expected,
               found.c_str());
  }
  int number_;
  std::map<std::string, std::string> values_;
};

template <typename Enum>
Enum enumNamed(const std::string& name, Enum count, const char* (*nameOf)(Enum), const char* what, int line) {
  for (int i = 0; i < static_cast<int>(count); ++i)
    if (name == nameOf(static_cast<Enum>(i))) return static_cast<Enum>(i);
  throwError(collInvalidArgument, "flight recorder trace, line %d: '%s' is not a %s", line, name.c_str(), what);
}

const char* stateNameOf(CallState state) { return callStateName(state); }

CallRecord parseCall(const Fields& f, int line) {
  CallRecord r;
  r.seq = static_cast<uint64_t>(f.integer("seq"));
  r.type = enumNamed(f.text("op"), CollType::kCount, operationName, "collective", line);
  r.datatype = enumNamed(f.text("type"), static_cast<collDataType_t>(collNumTypes), kernels::dataTypeName,
                         "datatype", line);
  r.op = enumNamed(f.text("redop"), collNumOps, kernels::redOpName, "reduction", line);
  r.count = static_cast<uint64_t>(f.integer("count"));
  r.root = static_cast<int32_t>(f.integer("root"));
  r.peer = static_cast<int32_t>(f.integer("peer"));
  r.algorithm = decodeName(f.text("algo"));
  r.state = enumNamed(f.text("state"), static_cast<CallState>(4), stateNameOf, "call state", line);
  r.device = f.integer("device") != 0;
  r.result = static_cast<collResult_t>(f.integer("result"));
  r.startNs = f.integer("start_ms") * 1000000;
  r.endNs = f.integer("end_ms") * 1000000;
  return r;
}

TraceHeader parseHeader(const Fields& f) {
  TraceHeader h;
  h.commName = decodeName(f.text("name"));
  h.commToken = f.hex("token");
  h.rank = static_cast<int>(f.integer("rank"));
  h.nranks = static_cast<int>(f.integer("nranks"));
  h.pid = static_cast<int>(f.integer("pid"));
  h.host = decodeName(f.text("host"));
  h.reason = decodeName(f.text("reason"));
  h.wallMs = f.integer("wall_ms");
  h.collectivesBegun = static_cast<uint64_t>(f.integer("begun"));
  h.collectivesCompleted = static_cast<uint64_t>(f.integer("completed"));
  return h;
}

}  // namespace

std::string formatTrace(const TraceHeader& h, const std::vector<CallRecord>& calls, size_t newestCalls) {
  const int64_t monotonicNow = coarseMonotonicNs();
  const int64_t wallNow = wallNs();
  std::string text = formatString("%s\nversion %d\n", kTitle, kVersion);
  text += formatString(
      "comm name=%s token=%016llx rank=%d nranks=%d pid=%d host=%s reason=%s wall_ms=%lld begun=%llu completed=%llu\n",
      encodeName(h.commName).c_str(), static_cast<unsigned long long>(h.commToken), h.rank, h.nranks, h.pid,
      encodeName(h.host).c_str(), encodeName(h.reason).c_str(), static_cast<long long>(wallNow / 1000000),
      static_cast<unsigned long long>(h.collectivesBegun), static_cast<unsigned long long>(h.collectivesCompleted));
  const size_t first = newestCalls > 0 && calls.size() > newestCalls ? calls.size() - newestCalls : 0;
  for (size_t i = first; i < calls.size(); ++i) {
    const CallRecord& r = calls[i];
    text += formatString(
        "call seq=%llu op=%s type=%s count=%llu redop=%s root=%d peer=%d algo=%s state=%s device=%d result=%d "
        "start_ms=%lld end_ms=%lld\n",
        static_cast<unsigned long long>(r.seq), operationName(r.type), kernels::dataTypeName(r.datatype),
        static_cast<unsigned long long>(r.count), kernels::redOpName(r.op), r.root, r.peer,
        encodeName(r.algorithm).c_str(), callStateName(r.state), r.device ? 1 : 0, static_cast<int>(r.result),
        static_cast<long long>(wallMsOf(r.startNs, monotonicNow, wallNow)),
        static_cast<long long>(wallMsOf(r.endNs, monotonicNow, wallNow)));
  }
  return text;
}

RankTrace parseTrace(const std::string& text) {
  RankTrace trace;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  bool sawVersion = false, sawComm = false;
  while (std::getline(lines, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string keyword;
    words >> keyword;
    if (keyword == "version") {
      int version = 0;
      words >> version;
      if (version != kVersion)
        throwError(collInvalidArgument, "flight recorder trace, line %d: version %d, this build reads version %d",
                   number, version, kVersion);
      sawVersion = true;
    } else if (keyword == "comm") {
      trace.header = parseHeader(Fields(line, number));
      sawComm = true;
    } else if (keyword == "call") {
      trace.calls.push_back(parseCall(Fields(line, number), number));
    } else {
      throwError(collInvalidArgument, "flight recorder trace, line %d: expected 'version', 'comm' or 'call', found '%s'",
                 number, keyword.c_str());
    }
  }
  if (!sawVersion || !sawComm)
    throwError(collInvalidArgument, "flight recorder trace: expected a 'version' and a 'comm' line, found %s",
               sawVersion ? "no 'comm' line" : "no 'version' line");
  return trace;
}

std::string traceFilePath(const std::string& dir, uint64_t commToken, int rank) {
  return formatString("%s/colltrace.%016llx.rank%d.txt", dir.empty() ? "." : dir.c_str(),
                      static_cast<unsigned long long>(commToken), rank);
}

void writeTraceFile(const std::string& path, const std::string& text) {
  const std::string temporary = formatString("%s.tmp%d", path.c_str(), static_cast<int>(getpid()));
  int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throwSystemError(formatString("writing the flight recorder trace %s", temporary.c_str()).c_str());
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno;
      close(fd);
      unlink(temporary.c_str());
      errno = saved;
      throwSystemError(formatString("writing the flight recorder trace %s", temporary.c_str()).c_str());
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  if (rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    unlink(temporary.c_str());
    errno = saved;
    throwSystemError(formatString("renaming the flight recorder trace to %s", path.c_str()).c_str());
  }
}

}  // namespace trace
}  // namespace coll
