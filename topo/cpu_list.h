// CPU numbers as the kernel names them (the N of /sys/devices/system/cpu/cpuN), and the few set
// operations that topology discovery and rank binding need on them.
#pragma once

#include <sched.h>

#include <string>
#include <vector>

namespace coll {
namespace topo {

// Ascending and without repeats; every function here keeps it so.
using CpuList = std::vector<int>;

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}. Malformed items are skipped (sysfs and hwloc write this
// format; a truncated line must not turn into a bogus CPU). Numbers outside [0, CPU_SETSIZE)
// are dropped: no affinity call could use them.
CpuList parseCpuList(const std::string& text);

// {0,1,2,3,8} -> "0-3,8"; "" for an empty list.
std::string formatCpuList(const CpuList& cpus);

CpuList intersectCpus(const CpuList& a, const CpuList& b);
CpuList uniteCpus(const CpuList& a, const CpuList& b);
bool containsCpu(const CpuList& cpus, int cpu);
// True when every CPU of `part` is in `whole`.
bool containsAllCpus(const CpuList& whole, const CpuList& part);

CpuList cpuListFromSet(const cpu_set_t& set);
cpu_set_t cpuSetFromList(const CpuList& cpus);

// The CPUs this process may run on (sched_getaffinity); empty when the call fails.
CpuList processAffinity();

}  // namespace topo
}  // namespace coll
