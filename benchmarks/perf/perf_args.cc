#include "perf_args.h"

#include <getopt.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace collperf {

const char* launcherRank() {
  for (const char* var : {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* v = getenv(var);
    if (v != nullptr) return v;
  }
  return "0";
}

bool isReportingRank() { return strcmp(launcherRank(), "0") == 0; }

namespace {

void printUsage(FILE* out, const char* program, bool hasOp) {
  fprintf(out,
          "usage: %s [-b minbytes] [-e maxbytes] [-f stepfactor | -i stepbytes] [--sizes list]\n"
          "       %*s [-n iters[,iters...]] [-w warmups[,warmups...]]\n"
          "       %*s [-c 0|1] [-d type|all]%s [-r root] [-z 0|1] [-m host|device] [--counts P] [-h]\n",
          program, static_cast<int>(strlen(program)), "", static_cast<int>(strlen(program)), "",
          hasOp ? " [-o op|all]" : "");
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
          "      --sizes LIST       these sizes instead of -b/-e/-f/-i: rising, comma-separated\n"
          "                         (e.g. 8,1K,64K,16M)\n"
          "  -n, --iters N          timed iterations per size (default 20); or a comma-separated\n"
          "                         count per size, in order\n"
          "  -w, --warmup_iters N   untimed iterations before them (default 5); or one per size\n"
          "  -c, --check 0|1        verify every result (default 1); #wrong counts bad elements\n"
          "  -d, --datatype T       int8 uint8 int32 uint32 int64 uint64 half float double bfloat16,\n"
          "                         or all (default float)\n"
          "  -o, --op OP            sum prod max min avg, or all (default sum; reductions only)\n"
          "  -r, --root R           root rank (default 0; rooted collectives only)\n"
          "  -z, --blocking 0|1     1 (default): blocking communicator; 0: non-blocking config\n"
          "  -m, --memory host|device  buffers in host memory or GPU memory (default: GPU memory\n"
          "                         where the rank has a GPU and the library runs device calls,\n"
          "                         else host memory)\n"
          "      --counts P         variable-count programs: how a size splits between ranks:\n"
          "                         even, linear (rank r holds r+1 shares; default), zeros (odd\n"
          "                         ranks none), one (rank 0 all)\n"
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

// "a,b,c" -> {"a", "b", "c"}; an empty text or piece stays an empty piece, which every parser
// below refuses.
std::vector<std::string> splitAtCommas(const char* text) {
  std::vector<std::string> pieces;
  std::string all(text);
  size_t begin = 0;
  for (size_t end; (end = all.find(',', begin)) != std::string::npos; begin = end + 1)
    pieces.push_back(all.substr(begin, end - begin));
  pieces.push_back(all.substr(begin));
  return pieces;
}

// "N" or "N1,N2,...", each in [lo, hi].
bool parseIntList(const char* text, long lo, long hi, std::vector<int>* out) {
  std::vector<int> values;
  for (const std::string& piece : splitAtCommas(text)) {
    int v = 0;
    if (!parseInt(piece.c_str(), lo, hi, &v)) return false;
    values.push_back(v);
  }
  *out = std::move(values);
  return true;
}

// "8,1K,64M": at least one size, each as parseBytes takes it, rising.
bool parseSizeList(const char* text, std::vector<size_t>* out) {
  std::vector<size_t> values;
  for (const std::string& piece : splitAtCommas(text)) {
    size_t v = 0;
    if (!parseBytes(piece.c_str(), &v) || (!values.empty() && v <= values.back())) return false;
    values.push_back(v);
  }
  *out = std::move(values);
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

std::vector<size_t> sizesToRun(const PerfArgs& args) {
  if (!args.sizeList.empty()) return args.sizeList;
  std::vector<size_t> sizes;
  for (size_t size = args.minBytes; size <= args.maxBytes;) {
    sizes.push_back(size);
    size_t next = args.stepFactor > 1 ? size * args.stepFactor : size + args.stepBytes;
    if (next <= size) break;  // overflow, or a zero step at minBytes == maxBytes
    size = next;
  }
  return sizes;
}

int countFor(const std::vector<int>& counts, size_t index) { return counts.size() == 1 ? counts[0] : counts.at(index); }

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
                                 {"sizes", required_argument, nullptr, 'S'},
                                 {"counts", required_argument, nullptr, 'C'},
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
        ok = parseIntList(optarg, 1, 1 << 30, &args->iters);
        break;
      case 'w':
        ok = parseIntList(optarg, 0, 1 << 30, &args->warmups);
        break;
      case 'S':
        ok = parseSizeList(optarg, &args->sizeList);
        if (!ok) error = std::string("--sizes ") + optarg + ": expected rising sizes, comma-separated (e.g. 8,1K,64M)";
        break;
      case 'C':
        ok = parseCountPattern(optarg, &args->counts);
        if (!ok) error = std::string("--counts ") + optarg + ": expected even, linear, zeros or one";
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
  // --sizes replaces -b/-e/-f/-i, whatever they say; min and max then describe the list.
  if (!args->sizeList.empty()) {
    args->minBytes = args->sizeList.front();
    args->maxBytes = args->sizeList.back();
  }
  if (ok && args->minBytes > args->maxBytes) {
    ok = false;
    error = "-b (minbytes) is larger than -e (maxbytes)";
  }
  if (ok && args->sizeList.empty() && args->stepFactor <= 1 && args->stepBytes == 0 &&
      args->minBytes < args->maxBytes) {
    ok = false;
    error = "the step is zero: give -f > 1 or -i > 0";
  }
  const size_t nsizes = ok ? sizesToRun(*args).size() : 0;
  for (const auto& [flag, counts] : {std::pair<const char*, const std::vector<int>*>{"-n", &args->iters},
                                     std::pair<const char*, const std::vector<int>*>{"-w", &args->warmups}}) {
    if (ok && counts->size() > 1 && counts->size() != nsizes) {
      ok = false;
      error = std::string(flag) + " gives " + std::to_string(counts->size()) + " counts for " + std::to_string(nsizes) +
              " sizes: give one count for every size, or one per size";
    }
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
