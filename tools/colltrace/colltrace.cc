// colltrace: which rank held a dead job up, and in which call, from the flight-recorder dumps its
// ranks left (one file per rank and communicator: src/trace/trace_dump.h). For each communicator
// found it prints the same line a live timeout prints, then, with --calls, each rank's newest
// calls. Exit status: 0 when every dump was read, 1 when one could not be, 2 for bad arguments.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/reduce.h"
#include "src/trace/hang_diagnosis.h"
#include "src/trace/trace_dump.h"

namespace {

using coll::trace::RankTrace;

void usage(FILE* out) {
  fprintf(out,
          "usage: colltrace [--calls N] PATH...\n"
          "  PATH: a directory of dumps (COLL_TRACE_DIR: colltrace.<token>.rank<r>.txt) or dump files.\n"
          "  Prints, per communicator, which ranks wait in which call and which rank is behind:\n"
          "    comm trainer (4f2a09c1d3e8b6a7, 4 ranks): ranks 0-2 wait in all_reduce #1234 (4 MiB float);\n"
          "      rank 3 last completed #1233 and is in broadcast #1234\n"
          "  --calls N  also list each rank's N newest calls\n");
}

bool isDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The dump files a path names: itself, or the colltrace.*.txt files in the directory.
std::vector<std::string> dumpFiles(const std::string& path) {
  if (!isDirectory(path)) return {path};
  std::vector<std::string> files;
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return files;
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind("colltrace.", 0) == 0 && name.size() > 4 && name.compare(name.size() - 4, 4, ".txt") == 0)
      files.push_back(path + "/" + name);
  }
  closedir(dir);
  return files;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) coll::throwError(collSystemError, "colltrace: cannot read %s", path.c_str());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void printCalls(const RankTrace& trace, size_t newest) {
  const auto& calls = trace.calls;
  const size_t first = calls.size() > newest ? calls.size() - newest : 0;
  for (size_t i = first; i < calls.size(); ++i) {
    const auto& c = calls[i];
    printf("    rank %d: #%llu %s %llu x %s %s%s%s\n", trace.header.rank, static_cast<unsigned long long>(c.seq),
           coll::trace::operationName(c.type), static_cast<unsigned long long>(c.count),
           coll::kernels::dataTypeName(c.datatype), coll::trace::callStateName(c.state),
           c.algorithm.empty() ? "" : " via ", c.algorithm.c_str());
  }
}

// The communicator's line: every rank that left a dump as its trace says, the others silent.
void report(const std::map<int, RankTrace>& ranks, size_t calls) {
  const RankTrace& any = ranks.begin()->second;
  const int nranks = any.header.nranks;
  std::vector<coll::trace::RankStatus> statuses;
  for (int r = 0; r < nranks; ++r) {
    auto it = ranks.find(r);
    statuses.push_back(it != ranks.end() ? coll::trace::statusFromTrace(it->second)
                                         : coll::trace::silentRank(r, "left no dump"));
  }
  printf("comm %s (%016llx, %d ranks): %s\n", any.header.commName.empty() ? "-" : any.header.commName.c_str(),
         static_cast<unsigned long long>(any.header.commToken), nranks, coll::trace::describeHang(statuses).c_str());
  if (calls == 0) return;
  for (const auto& [rank, trace] : ranks) printCalls(trace, calls);
}

}  // namespace

int main(int argc, char** argv) {
  size_t calls = 0;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    }
    if (arg == "--calls" && i + 1 < argc) {
      calls = static_cast<size_t>(strtoul(argv[++i], nullptr, 10));
    } else if (!arg.empty() && arg[0] == '-') {
      fprintf(stderr, "colltrace: unknown option %s\n", arg.c_str());
      usage(stderr);
      return 2;
    } else {
      paths.push_back(arg);
    }
  }
  if (paths.empty()) {
    usage(stderr);
    return 2;
  }
  // Communicators by token, then ranks.
  std::map<uint64_t, std::map<int, RankTrace>> comms;
  int status = 0;
  for (const std::string& path : paths) {
    for (const std::string& file : dumpFiles(path)) {
      try {
        RankTrace trace = coll::trace::parseTrace(readFile(file));
        comms[trace.header.commToken][trace.header.rank] = std::move(trace);
      } catch (const std::exception& e) {
        fprintf(stderr, "colltrace: %s: %s\n", file.c_str(), e.what());
        status = 1;
      }
    }
  }
  if (comms.empty()) {
    fprintf(stderr, "colltrace: no flight-recorder dump found in the paths given\n");
    return 1;
  }
  for (const auto& [token, ranks] : comms) report(ranks, calls);
  return status;
}
