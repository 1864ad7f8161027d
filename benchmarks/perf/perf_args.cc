#include "perf_args.h"

#include <getopt.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace collperf {

bool isReportingRank() {
  for (const char* var : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* v = getenv(var);
    if (v != nullptr) return strcmp(v, "0") == 0;
  }
  return true;
}

namespace {

void printUsage(FILE* out, const char* program, bool hasOp) {
  fprintf(out,
          "usage: %s [-b minbytes] [-e maxbytes] [-f stepfactor | -i stepbytes] [-n iters] [-w warmups]\n"
          "       %*s [-c 0|1] [-d type|all]%s [-r root] [-z 0|1] [-m host|device] [-h]\n",
          program, static_cast<int>(strlen(program)), "", hasOp ? " [-o op|all]" : "");
  fprintf(out,
          "\n"
          "Measures %s the way nccl-tests does. Start it with a launcher, e.g.\n"
          "  collrun -n 4 %s -b 8 -e 64M -f 2\n"
          "(mpirun, torchrun or srun also work; alone it runs as a single rank).\n"
          "\n"
          "  -b, --minbytes N       smallest size, bytes; K, M, G suffixes (default 32M)\n"
          "  -e, --maxbytes N       largest size (default 32M)\n"
          "  -f, --stepfactor N     multiply the size by N each step\n"
          "  -i, --stepbytes N      add N bytes each step (default 1M; used when -f is 1 or absent)\n"
          "  -n, --iters N          timed iterations per size (default 20)\n"
          "  -w, --warmup_iters N   untimed iterations before them (default 5)\n"
          "  -c, --check 0|1        verify every result (default 1); #wrong counts bad elements\n"
          "  -d, --datatype T       int8 uint8 int32 uint32 int64 uint64 half float double bfloat16,\n"
          "                         or all (default float)\n"
          "  -o, --op OP            sum prod max min avg, or all (default sum; reductions only)\n"
          "  -r, --root R           root rank (default 0; rooted collectives only)\n"
          "  -z, --blocking 0|1     1 (default): blocking communicator; 0: non-blocking config\n"
          "  -m, --memory host|device  buffers in host memory or GPU memory (default: GPU memory\n"
          "                         where the rank has a GPU and the library runs device calls,\n"
          "                         else host memory)\n"
          "  -h, --help             this text\n"
          "\n"
          "Time is the average per iteration, the maximum over ranks; algbw = size / time;\n"
          "busbw = algbw * the collective's factor (as nccl-tests). Exit status 1 when any\n"
          "element is wrong or a call fails, 2 for bad flags.\n",
          program, program);
}

bool parseInt(const char* text, long lo, long hi, int* out) {
  errno = 0;
  char* end = nullptr;
  long v = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

bool parseBool(const char* text, bool* out) {
  int v = 0;
  if (!parseInt(text, 0, 1, &v)) return false;
  *out = v != 0;
  return true;
}

}  // namespace

bool parseBytes(const char* text, size_t* bytes) {
  errno = 0;
  char* end = nullptr;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0 || end == text || text[0] == '-') return false;
  unsigned long long scale = 1;
  switch (*end) {
    case 'k':
    case 'K':
      scale = 1ull << 10;
      ++end;
      break;
    case 'm':
    case 'M':
      scale = 1ull << 20;
      ++end;
      break;
    case 'g':
    case 'G':
      scale = 1ull << 30;
      ++end;
      break;
    case 't':
    case 'T':
      scale = 1ull << 40;
      ++end;
      break;
    default:
      break;
  }
  if (scale > 1 && (*end == 'i' || *end == 'I')) ++end;  // "64Mi", "64MiB"
  if (*end == 'b' || *end == 'B') ++end;
  if (*end != '\0' || v > (~0ull) / scale) return false;
  *bytes = static_cast<size_t>(v * scale);
  return true;
}

ArgsOutcome parsePerfArgs(int argc, char** argv, const char* program, bool hasOp, PerfArgs* args) {
  static const option kLong[] = {{"minbytes", required_argument, nullptr, 'b'},
                                 {"maxbytes", required_argument, nullptr, 'e'},
                                 {"stepfactor", required_argument, nullptr, 'f'},
                                 {"stepbytes", required_argument, nullptr, 'i'},
                                 {"iters", required_argument, nullptr, 'n'},
                                 {"warmup_iters", required_argument, nullptr, 'w'},
                                 {"check", required_argument, nullptr, 'c'},
                                 {"op", required_argument, nullptr, 'o'},
                                 {"datatype", required_argument, nullptr, 'd'},
                                 {"root", required_argument, nullptr, 'r'},
                                 {"blocking", required_argument, nullptr, 'z'},
                                 {"memory", required_argument, nullptr, 'm'},
                                 {"nthreads", required_argument, nullptr, 't'},
                                 {"ngpus", required_argument, nullptr, 'g'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  const bool report = isReportingRank();
  for (int i = 0; i < argc; ++i) args->commandLine += (i ? " " : "") + std::string(argv[i]);
  std::string typeName = "float", opName = "sum";
  bool ok = true;
  std::string error;
  opterr = report ? 1 : 0;
  int c;
  while (ok && (c = getopt_long(argc, argv, "b:e:f:i:n:w:c:o:d:r:z:m:t:g:h", kLong, nullptr)) != -1) {
    std::string flag = std::string("-") + static_cast<char>(c);
    int v = 0;
    switch (c) {
      case 'b':
        ok = parseBytes(optarg, &args->minBytes);
        break;
      case 'e':
        ok = parseBytes(optarg, &args->maxBytes);
        break;
      case 'f':
        ok = parseInt(optarg, 1, 1 << 20, &v);
        args->stepFactor = static_cast<size_t>(v);
        break;
      case 'i':
        ok = parseBytes(optarg, &args->stepBytes);
        break;
      case 'n':
        ok = parseInt(optarg, 1, 1 << 30, &args->iters);
        break;
      case 'w':
        ok = parseInt(optarg, 0, 1 << 30, &args->warmups);
        break;
      case 'c':
        ok = parseBool(optarg, &args->check);
        break;
      case 'z':
        ok = parseBool(optarg, &args->blocking);
        break;
      case 'r':
        ok = parseInt(optarg, 0, 1 << 24, &args->root);
        break;
      case 'd':
        typeName = optarg;
        ok = typeName == "all" || findType(typeName) != nullptr;
        break;
      case 'o':
        opName = optarg;
        ok = opName == "all" || findOp(opName) != nullptr;
        break;
      case 'm':
        ok = strcmp(optarg, "host") == 0 || strcmp(optarg, "device") == 0;
        args->memory = strcmp(optarg, "device") == 0 ? MemoryKind::kDevice : MemoryKind::kHost;
        break;
      case 't':
      case 'g':  // nccl-tests' threads and GPUs per process: one rank per process here
        ok = parseInt(optarg, 1, 1, &v);
        if (!ok) error = flag + " " + optarg + ": only 1 is supported (one rank per process; use collrun -n)";
        break;
      case 'h':
        printUsage(stdout, program, hasOp);
        return ArgsOutcome::kExitSuccess;
      default:
        if (report) printUsage(stderr, program, hasOp);
        return ArgsOutcome::kUsageError;
    }
    if (!ok && error.empty()) error = "invalid value '" + std::string(optarg) + "' for " + flag;
  }
  if (ok && optind < argc) {
    ok = false;
    error = std::string("unexpected argument '") + argv[optind] + "'";
  }
  if (ok && args->minBytes > args->maxBytes) {
    ok = false;
    error = "-b (minbytes) is larger than -e (maxbytes)";
  }
  if (ok && args->stepFactor <= 1 && args->stepBytes == 0 && args->minBytes < args->maxBytes) {
    ok = false;
    error = "the step is zero: give -f > 1 or -i > 0";
  }
  if (!ok) {
    if (report) {
      fprintf(stderr, "%s: error: %s\n", program, error.c_str());
      printUsage(stderr, program, hasOp);
    }
    return ArgsOutcome::kUsageError;
  }
  if (typeName == "all") {
    for (const auto& t : allTypes()) args->types.push_back(&t);
  } else {
    args->types.push_back(findType(typeName));
  }
  if (!hasOp) {
    args->ops.push_back(findOp("sum"));
  } else if (opName == "all") {
    for (const auto& o : allOps()) args->ops.push_back(&o);
  } else {
    args->ops.push_back(findOp(opName));
  }
  return ArgsOutcome::kRun;
}

}  // namespace collperf
