// colltopo: prints what libcollective sees of this host (packages, NUMA nodes, cores, GPUs and
// NICs on PCI, network interfaces) and this process's CPU binding, as text or JSON. Modes that
// need more than the local host (a communicator's view) get their own file beside local_view.cc.
#include <cstdio>
#include <cstring>
#include <string>

#include "algorithm_view.h"
#include "collective.h"
#include "comm_view.h"
#include "local_view.h"

namespace {

const char kUsage[] =
    "usage: colltopo [--json] [--source auto|hwloc|sysfs]\n"
    "       collrun -n N colltopo --comm [--json]\n"
    "       colltopo --algorithms [--json]\n";

const char kHelp[] =
    "\n"
    "Prints this host's topology as libcollective discovers it: packages, NUMA nodes (CPUs and\n"
    "memory), cores and their hardware threads, PCI GPUs and NICs with the NUMA node and CPUs\n"
    "each is local to, network interfaces (addresses; virtual ones have no PCI device), and the\n"
    "CPUs this process may run on (under collrun --bind, the rank's binding).\n"
    "\n"
    "options:\n"
    "  --comm                  under a launcher (collrun, mpirun, srun): every rank joins one\n"
    "                          communicator and rank 0 prints each rank's host and binding, the\n"
    "                          transport between every pair, the host groups, the ring order,\n"
    "                          the trees and the all-reduce algorithm the planner picks per size\n"
    "  --algorithms            the algorithm table the planner and COLL_ALGO read: what each\n"
    "                          algorithm serves, how it runs and when the planner takes it (a\n"
    "                          Markdown table, the one docs/algorithms.md holds)\n"
    "  --json                  one JSON document instead of text\n"
    "  --source auto|hwloc|sysfs\n"
    "                          where the facts come from (default auto: hwloc when the build has\n"
    "                          it, else sysfs)\n"
    "  -h, --help              this text\n"
    "  --version               print the version and exit\n";

struct Options {
  bool json = false;
  bool comm = false;
  bool algorithms = false;
  coll::topo::TopologySource source = coll::topo::TopologySource::kAuto;
};

int usageError(const std::string& message) {
  fprintf(stderr, "colltopo: error: %s\n%sTry 'colltopo --help' for more information.\n", message.c_str(), kUsage);
  return 2;
}

bool parseSource(const std::string& text, coll::topo::TopologySource* source) {
  if (text == "auto")
    *source = coll::topo::TopologySource::kAuto;
  else if (text == "hwloc")
    *source = coll::topo::TopologySource::kHwloc;
  else if (text == "sysfs")
    *source = coll::topo::TopologySource::kSysfs;
  else
    return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      printf("%s%s", kUsage, kHelp);
      return 0;
    }
    if (arg == "--version") {
      printf("colltopo (libcollective) %d.%d.%d\n", COLL_MAJOR, COLL_MINOR, COLL_PATCH);
      return 0;
    }
    if (arg == "--json") {
      opts.json = true;
      continue;
    }
    if (arg == "--comm") {
      opts.comm = true;
      continue;
    }
    if (arg == "--algorithms") {
      opts.algorithms = true;
      continue;
    }
    if (arg == "--source" || arg.compare(0, 9, "--source=") == 0) {
      bool inlineValue = arg != "--source";
      if (!inlineValue && i + 1 >= argc) return usageError("option '--source' needs a value");
      std::string value = inlineValue ? arg.substr(9) : argv[++i];
      if (!parseSource(value, &opts.source)) {
        return usageError("invalid value '" + value + "' for --source: expected auto, hwloc or sysfs");
      }
      continue;
    }
    return usageError("unknown argument '" + arg + "'");
  }
  if (opts.algorithms) return colltopo::printAlgorithmTable(opts.json);
  if (opts.comm) return colltopo::printCommunicatorView(opts.json);
  return colltopo::printLocalView(opts.json, opts.source);
}
