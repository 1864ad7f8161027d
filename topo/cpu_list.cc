#include "topo/cpu_list.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "common/list_spec.h"

namespace coll {
namespace topo {

namespace {

bool validCpu(long cpu) { return cpu >= 0 && cpu < CPU_SETSIZE; }

void sortUnique(CpuList* cpus) {
  std::sort(cpus->begin(), cpus->end());
  cpus->erase(std::unique(cpus->begin(), cpus->end()), cpus->end());
}

}  // namespace

CpuList parseCpuList(const std::string& text) {
  CpuList cpus;
  for (const std::string& item : splitList(text)) {
    long lo = 0, hi = 0;
    char tail = 0;
    int fields = sscanf(item.c_str(), " %ld-%ld %c", &lo, &hi, &tail);
    if (fields == 2 && validCpu(lo) && validCpu(hi) && lo <= hi) {
      for (long c = lo; c <= hi; ++c) cpus.push_back(static_cast<int>(c));
    } else if (sscanf(item.c_str(), " %ld %c", &lo, &tail) == 1 && validCpu(lo)) {
      cpus.push_back(static_cast<int>(lo));
    }
  }
  sortUnique(&cpus);
  return cpus;
}

std::string formatCpuList(const CpuList& cpus) {
  std::string text;
  for (size_t i = 0; i < cpus.size();) {
    size_t end = i;
    while (end + 1 < cpus.size() && cpus[end + 1] == cpus[end] + 1) ++end;
    if (!text.empty()) text += ',';
    text += std::to_string(cpus[i]);
    if (end > i) text += '-' + std::to_string(cpus[end]);
    i = end + 1;
  }
  return text;
}

CpuList intersectCpus(const CpuList& a, const CpuList& b) {
  CpuList result;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(result));
  return result;
}

CpuList uniteCpus(const CpuList& a, const CpuList& b) {
  CpuList result;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(result));
  return result;
}

bool containsCpu(const CpuList& cpus, int cpu) { return std::binary_search(cpus.begin(), cpus.end(), cpu); }

bool containsAllCpus(const CpuList& whole, const CpuList& part) {
  return std::includes(whole.begin(), whole.end(), part.begin(), part.end());
}

CpuList cpuListFromSet(const cpu_set_t& set) {
  CpuList cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

cpu_set_t cpuSetFromList(const CpuList& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (validCpu(c)) CPU_SET(c, &set);
  }
  return set;
}

CpuList processAffinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return {};
  return cpuListFromSet(set);
}

}  // namespace topo
}  // namespace coll
