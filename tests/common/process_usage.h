// What this process holds right now, from /proc/self: for tests that check a resource stays flat
// (descriptors, threads, resident memory) across many cycles.
#pragma once

#include <dirent.h>

#include <cstddef>
#include <fstream>
#include <string>

namespace colltest {

inline size_t entriesIn(const char* directory) {
  size_t count = 0;
  if (DIR* dir = opendir(directory)) {
    while (dirent* entry = readdir(dir))
      if (entry->d_name[0] != '.') ++count;
    closedir(dir);
  }
  return count;
}

inline size_t openFds() { return entriesIn("/proc/self/fd"); }
inline size_t threadCount() { return entriesIn("/proc/self/task"); }

inline size_t residentKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  return 0;
}

}  // namespace colltest
