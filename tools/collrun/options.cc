#include "options.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "collective.h"
#include "job_secret.h"

namespace collrun {
namespace {

const char kUsage[] =
    "usage: collrun -n N [--nnodes M --node-rank K --master-addr A --master-port P --secret-file FILE]\n"
    "               [--bind auto|none|core|cores|numa] [--tag-output] [--timeout SECONDS]\n"
    "               [--grace SECONDS] [--keep-going]\n"
    "               PROGRAM [ARGS...]\n"
    "       collrun --new-secret\n";

const char kHelp[] =
    "\n"
    "Starts N processes of PROGRAM on this node, one per rank, and supervises them.\n"
    "\n"
    "options:\n"
    "  -n, --nproc N          processes (ranks) to start on this node (required, >= 1)\n"
    "  --nnodes M             nodes in the job (default 1); each node runs its own collrun\n"
    "  --node-rank K          this node's index in [0, M) (default 0)\n"
    "  --master-addr A        address of the rendezvous (rank 0's host; default 127.0.0.1)\n"
    "  --master-port P        port of the rendezvous; required when M > 1, otherwise a free\n"
    "                         port is picked\n"
    "  --secret-file FILE     COLL_STORE_SECRET for the ranks, from FILE's first line; a job on\n"
    "                         several nodes needs one secret on every node (this, or the same\n"
    "                         COLL_STORE_SECRET exported on each)\n"
    "  --new-secret           print a fresh random secret (64 hex digits) and exit\n"
    "  --bind auto|none|core|cores|numa\n"
    "                         pin each rank near its GPU (local rank i uses GPU i mod GPUs),\n"
    "                         else near the job's NIC (COLL_SOCKET_IFNAME, or the interface\n"
    "                         that reaches the master address), else round-robin; core: one\n"
    "                         core per rank, cores: the rank's share of the cores (as many as\n"
    "                         OMP_NUM_THREADS below), numa: a whole NUMA node, none: no\n"
    "                         pinning; auto (default): cores when the ranks fit this node's\n"
    "                         cores, else none. An explicit choice is printed to stderr, a\n"
    "                         line per rank\n"
    "  --tag-output           prefix every line the ranks print with \"[RANK] \"\n"
    "  --timeout SECONDS      stop every rank after SECONDS and exit 124\n"
    "  --grace SECONDS        after a rank fails, how long the others may take to print their\n"
    "                         own errors and exit before they are stopped (default 3; 0: stop\n"
    "                         them at once)\n"
    "  --keep-going           a rank that fails does not stop the others (a job that shrinks\n"
    "                         its communicators and goes on without it: docs/errors.md); exit\n"
    "                         status: the first rank that exited non-zero, 0 when every rank\n"
    "                         that exited did so with 0 (ranks killed by a signal do not count)\n"
    "  -h, --help             this text\n"
    "  --version              print the version and exit\n"
    "  --                     end of collrun's options (only needed when PROGRAM starts with -)\n"
    "\n"
    "Each process gets RANK (node_rank*N + local rank), WORLD_SIZE (M*N), LOCAL_RANK,\n"
    "LOCAL_WORLD_SIZE (N), NODE_RANK, MASTER_ADDR and MASTER_PORT, and COLL_STORE_SECRET so\n"
    "that only this job's ranks can join its rendezvous: from --secret-file, else the one in\n"
    "collrun's environment, else (single node only) a random one. A multi-node job without\n"
    "a secret is refused unless COLL_STORE_ALLOW_NO_SECRET=1. With N > 1 and no OMP_NUM_THREADS\n"
    "in collrun's environment, each rank gets OMP_NUM_THREADS = collrun's CPUs / N (at least\n"
    "1), so that the ranks' thread pools (OpenMP, torch) do not outnumber the cores.\n"
    "\n"
    "SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to every rank (a third\n"
    "SIGINT/SIGTERM kills them). When a rank exits with a non-zero status or is killed by a\n"
    "signal, the others get --grace seconds to end by themselves (a rank that saw the same\n"
    "failure prints its own reason), then SIGTERM, then SIGKILL 5 s later; collrun names the\n"
    "rank that failed first and exits with its status (128+signal for a signal). Each rank runs\n"
    "in its own process group; when collrun's stdin is a terminal the ranks' stdin is /dev/null.\n";

void usageError(const std::string& msg) {
  fprintf(stderr, "collrun: error: %s\n%sTry 'collrun --help' for more information.\n", msg.c_str(), kUsage);
}

bool parseInt(const char* s, long lo, long hi, int* out) {
  if (s == nullptr || *s == '\0') return false;
  errno = 0;
  char* end = nullptr;
  long v = strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

bool parseSeconds(const char* s, double* out, bool allowZero = false) {
  if (s == nullptr || *s == '\0') return false;
  errno = 0;
  char* end = nullptr;
  double v = strtod(s, &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v) || v < 0 || (v == 0 && !allowZero)) return false;
  *out = v;
  return true;
}

bool parseBinding(const char* s, Binding* out) {
  if (strcmp(s, "auto") == 0)
    *out = Binding::kAuto;
  else if (strcmp(s, "none") == 0)
    *out = Binding::kNone;
  else if (strcmp(s, "core") == 0)
    *out = Binding::kCore;
  else if (strcmp(s, "cores") == 0)
    *out = Binding::kCores;
  else if (strcmp(s, "numa") == 0)
    *out = Binding::kNuma;
  else
    return false;
  return true;
}

// Options that take a value, as "--opt VALUE" or "--opt=VALUE" ("-n4" too).
enum class Key { kNproc, kNnodes, kNodeRank, kMasterAddr, kMasterPort, kBind, kTimeout, kGrace, kSecretFile, kUnknown };

Key keyOf(const std::string& name) {
  if (name == "-n" || name == "--nproc" || name == "--nproc-per-node") return Key::kNproc;
  if (name == "--nnodes") return Key::kNnodes;
  if (name == "--node-rank") return Key::kNodeRank;
  if (name == "--master-addr") return Key::kMasterAddr;
  if (name == "--master-port") return Key::kMasterPort;
  if (name == "--bind") return Key::kBind;
  if (name == "--timeout") return Key::kTimeout;
  if (name == "--grace") return Key::kGrace;
  if (name == "--secret-file") return Key::kSecretFile;
  return Key::kUnknown;
}

bool applyValue(Key key, const std::string& name, const char* value, Options* opts) {
  bool ok = true;
  switch (key) {
    case Key::kNproc:
      ok = parseInt(value, 1, 4096, &opts->nprocs);
      break;
    case Key::kNnodes:
      ok = parseInt(value, 1, 65536, &opts->nnodes);
      break;
    case Key::kNodeRank:
      ok = parseInt(value, 0, 65535, &opts->nodeRank);
      break;
    case Key::kMasterAddr:
      ok = *value != '\0';
      if (ok) opts->masterAddr = value;
      break;
    case Key::kMasterPort:
      ok = parseInt(value, 1, 65535, &opts->masterPort);
      break;
    case Key::kBind:
      ok = parseBinding(value, &opts->bind);
      break;
    case Key::kTimeout:
      ok = parseSeconds(value, &opts->timeoutSec);
      break;
    case Key::kGrace:
      ok = parseSeconds(value, &opts->graceSec, /*allowZero=*/true);
      break;
    case Key::kSecretFile:
      ok = *value != '\0';
      if (ok) opts->secretFile = value;
      break;
    case Key::kUnknown:
      ok = false;
      break;
  }
  if (!ok) {
    const char* expected = "a valid value";
    switch (key) {
      case Key::kNproc:
        expected = "an integer in [1, 4096]";
        break;
      case Key::kNnodes:
        expected = "an integer in [1, 65536]";
        break;
      case Key::kNodeRank:
        expected = "an integer >= 0";
        break;
      case Key::kMasterAddr:
        expected = "a host name or address";
        break;
      case Key::kMasterPort:
        expected = "a port in [1, 65535]";
        break;
      case Key::kBind:
        expected = "auto, none, core, cores or numa";
        break;
      case Key::kTimeout:
        expected = "a positive number of seconds";
        break;
      case Key::kGrace:
        expected = "a number of seconds >= 0";
        break;
      case Key::kSecretFile:
        expected = "a file name";
        break;
      case Key::kUnknown:
        break;
    }
    usageError("invalid value '" + std::string(value) + "' for " + name + ": expected " + expected);
  }
  return ok;
}

bool validate(const Options& opts, bool sawNproc) {
  if (!sawNproc) {
    usageError("missing -n N (the number of processes to start)");
    return false;
  }
  if (opts.command.empty()) {
    usageError("missing PROGRAM to run");
    return false;
  }
  if (opts.nodeRank >= opts.nnodes) {
    usageError("--node-rank " + std::to_string(opts.nodeRank) + " is out of range: expected [0, " +
               std::to_string(opts.nnodes) + ") (--nnodes)");
    return false;
  }
  if (opts.nnodes > 1 && opts.masterPort == 0) {
    usageError("--master-port is required when --nnodes > 1 (every node must use the same one)");
    return false;
  }
  if (static_cast<long long>(opts.nnodes) * opts.nprocs > (1LL << 24)) {
    usageError("--nnodes times -n is too large");
    return false;
  }
  return true;
}

}  // namespace

ParseOutcome parseOptions(int argc, char** argv, Options* opts) {
  bool sawNproc = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-") break;  // PROGRAM
    if (arg == "-h" || arg == "--help") {
      printf("%s%s", kUsage, kHelp);
      return ParseOutcome::kExitSuccess;
    }
    if (arg == "--version") {
      printf("collrun (libcollective) %d.%d.%d\n", COLL_MAJOR, COLL_MINOR, COLL_PATCH);
      return ParseOutcome::kExitSuccess;
    }
    if (arg == "--new-secret") {
      const std::string secret = randomHexSecret();
      if (secret.empty()) {
        fprintf(stderr, "collrun: error: --new-secret: getrandom failed\n");
        return ParseOutcome::kUsageError;
      }
      printf("%s\n", secret.c_str());
      return ParseOutcome::kExitSuccess;
    }
    if (arg == "--tag-output") {
      opts->tagOutput = true;
      continue;
    }
    if (arg == "--keep-going") {
      opts->keepGoing = true;
      continue;
    }
    std::string name = arg;
    const char* value = nullptr;
    size_t eq = arg.find('=');
    if (arg.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = argv[i] + eq + 1;
    } else if (arg.size() > 2 && arg.compare(0, 2, "-n") == 0 && arg[2] != '-') {
      name = "-n";
      value = argv[i] + 2;
    }
    Key key = keyOf(name);
    if (key == Key::kUnknown) {
      usageError("unknown option '" + arg + "'");
      return ParseOutcome::kUsageError;
    }
    if (value == nullptr) {
      if (i + 1 >= argc) {
        usageError("option '" + name + "' needs a value");
        return ParseOutcome::kUsageError;
      }
      value = argv[++i];
    }
    if (!applyValue(key, name, value, opts)) return ParseOutcome::kUsageError;
    if (key == Key::kNproc) sawNproc = true;
  }
  for (; i < argc; ++i) opts->command.push_back(argv[i]);
  return validate(*opts, sawNproc) ? ParseOutcome::kRun : ParseOutcome::kUsageError;
}

}  // namespace collrun
