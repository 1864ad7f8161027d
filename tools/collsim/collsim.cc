// collsim: large jobs on paper. Plans and walks the schedules of the library's own planner and
// algorithms for N ranks on H hosts, without processes, and prints one table per question:
// the planner's all-reduce choice per size, each algorithm's modelled time, the connections,
// FIFO memory and messages per rank, the other collectives' choices, and the bootstrap's
// all-gather. It also checks both ends of every connection (call_study.h) and exits 1 when a
// schedule uses a connection its peer does not. docs/algorithms.md, "Large jobs, simulated".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "tools/collsim/tables.h"

namespace {

const char kUsage[] =
    "usage: collsim [--ranks LIST] [--hosts LIST] [--sizes LIST] [--all-ranks-up-to N] [--sample N]\n"
    "               [--no-others] [--markdown]\n"
    "  --ranks LIST          ranks per job (default 1024,2048,4096,8192,16384)\n"
    "  --hosts LIST          hosts per job; shapes where hosts divide ranks (default 8,64,512,2048)\n"
    "  --sizes LIST          bytes per rank of the studied calls, K/M/G suffixes (default 8,1G)\n"
    "  --all-ranks-up-to N   walk every rank's schedule up to N ranks (default 1024); beyond, a sample\n"
    "  --sample N            pseudo-random ranks added to the sample (default 24)\n"
    "  --no-others           only all-reduce, not the other collectives\n"
    "  --markdown            Markdown tables (docs/algorithms.md)\n"
    "Exit status: 0, 1 when a connection is used on one end only, 2 for bad flags.\n";

[[noreturn]] void usageError(const std::string& why) {
  fprintf(stderr, "collsim: %s\n%s", why.c_str(), kUsage);
  exit(2);
}

unsigned long long parseNumber(const char* flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  unsigned long long value = strtoull(text.c_str(), &end, 10);
  unsigned long long scale = 1;
  if (end != nullptr && *end != '\0') {
    const std::string suffix = end;
    scale = suffix == "K" ? 1ull << 10 : suffix == "M" ? 1ull << 20 : suffix == "G" ? 1ull << 30 : 0;
  }
  if (text.empty() || text[0] == '-' || errno != 0 || scale == 0 || value == 0 || value > (1ull << 40) / scale)
    usageError(std::string(flag) + ": '" + text + "' is not a positive number (K, M or G may follow)");
  return value * scale;
}

std::vector<unsigned long long> parseList(const char* flag, const std::string& text) {
  std::vector<unsigned long long> values;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    values.push_back(parseNumber(flag, text.substr(start, comma - start)));
    if (comma == std::string::npos) return values;
    start = comma + 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<unsigned long long> ranks = {1024, 2048, 4096, 8192, 16384}, hosts = {8, 64, 512, 2048};
  collsim::SurveyOptions options;
  bool markdown = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usageError(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--help" || flag == "-h") {
      fputs(kUsage, stdout);
      return 0;
    } else if (flag == "--ranks") {
      ranks = parseList("--ranks", value());
    } else if (flag == "--hosts") {
      hosts = parseList("--hosts", value());
    } else if (flag == "--sizes") {
      options.sizes.clear();
      for (unsigned long long s : parseList("--sizes", value())) options.sizes.push_back(s);
    } else if (flag == "--all-ranks-up-to") {
      options.allRanksUpTo = static_cast<int>(parseNumber("--all-ranks-up-to", value()));
    } else if (flag == "--sample") {
      options.extraRanks = static_cast<int>(parseNumber("--sample", value()));
    } else if (flag == "--no-others") {
      options.otherCollectives = false;
    } else if (flag == "--markdown") {
      markdown = true;
    } else {
      usageError("unknown flag '" + flag + "'");
    }
  }
  const collsim::TransportShape transports = collsim::defaultTransportShape();
  std::vector<collsim::ShapeSurvey> surveys;
  size_t problems = 0;
  const auto start = std::chrono::steady_clock::now();
  try {
    for (unsigned long long n : ranks)
      for (unsigned long long h : hosts) {
        if (n > (1u << 20)) usageError("--ranks: at most 1048576");
        if (h > n || n % h != 0) continue;
        surveys.push_back(collsim::surveyShape({static_cast<int>(n), static_cast<int>(h)}, transports, options));
        for (const std::string& p : surveys.back().problems()) {
          fprintf(stderr, "collsim: %s\n", p.c_str());
          ++problems;
        }
      }
  } catch (const coll::CollError& e) {
    fprintf(stderr, "collsim: %s\n", e.what());
    return 1;
  }
  if (surveys.empty()) usageError("no job shape: every host count must divide a rank count and not exceed it");
  for (const collsim::Table& table : collsim::surveyTables(surveys, transports))
    printf("%s\n", collsim::renderTable(table, markdown).c_str());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fprintf(stderr, "collsim: %zu job shapes in %.1f s; %zu connections used on one end only\n", surveys.size(), seconds,
          problems);
  return problems == 0 ? 0 : 1;
}
