/*
 * One collective through Open MPI, timed the way the *_perf programs time libcollective: per size,
 * warm-up calls, a barrier, then `iters` out-of-place calls back to back; the time is the average
 * per call, the maximum over ranks. Built by compare.py with mpicc.
 *
 *   mpirun -np 2 mpi_bench --coll gather --sizes 8,65536 --iters 1000,200 --warmups 5 [--check 1]
 *
 * --coll is a *_perf program's name without _perf (default all_reduce); float32, sum, root 0. The
 * variable-count ones (allgatherv, alltoallv, reducescatterv) split each size between ranks by
 * --counts, as the perf programs' --counts does.
 * --sizes are bytes (K/M/G suffixes allowed) with the perf programs' meaning (collectives.py): the
 * larger buffer, rounded to whole elements and, where the buffer is split into one block per rank,
 * to whole blocks of at least one element. --iters and --warmups take one value for every size or
 * one per size. Output: '#' comment lines, then one row per size with the columns
 *   size(B) count iters time(us) algbw(GB/s) busbw(GB/s) #wrong
 * where size is the size measured, count the call's count argument, busbw = algbw times the
 * collective's nccl-tests factor, and #wrong counts wrong elements of one checked call (-1 when
 * not checked).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 256

static int parseBytes(const char* s, size_t* out) {
  char* end = NULL;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return 0;
  switch (*end) {
    case 'k':
    case 'K':
      v <<= 10;
      ++end;
      break;
    case 'm':
    case 'M':
      v <<= 20;
      ++end;
      break;
    case 'g':
    case 'G':
      v <<= 30;
      ++end;
      break;
    default:
      break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return 0;
  *out = (size_t)v;
  return 1;
}

/* "a,b,c" -> values; returns how many, or -1 when malformed. */
static int parseList(const char* text, size_t* values, int isBytes) {
  char buf[4096];
  int n = 0;
  if (strlen(text) >= sizeof(buf)) return -1;
  strcpy(buf, text);
  for (char* tok = strtok(buf, ","); tok != NULL; tok = strtok(NULL, ",")) {
    if (n == MAX_SIZES) return -1;
    if (isBytes) {
      if (!parseBytes(tok, &values[n])) return -1;
    } else {
      char* end = NULL;
      long v = strtol(tok, &end, 10);
      if (end == tok || *end != '\0' || v < 0) return -1;
      values[n] = (size_t)v;
    }
    ++n;
  }
  return n;
}

enum Coll {
  ALL_REDUCE,
  ALL_GATHER,
  ALLTOALL,
  BROADCAST,
  GATHER,
  REDUCE,
  REDUCE_SCATTER,
  SCATTER,
  SENDRECV,
  ALLGATHERV,
  ALLTOALLV,
  REDUCESCATTERV
};
enum Factor { ONE, BLOCKS, TWICE }; /* busbw = algbw * 1, (n-1)/n, 2(n-1)/n */

/* The same rules as collectives.py, in enum Coll's order: split collectives measure n blocks of size/n. */
static const struct {
  const char* name;
  int split;
  enum Factor factor;
} kColls[] = {{"all_reduce", 0, TWICE},      {"all_gather", 1, BLOCKS}, {"alltoall", 1, BLOCKS},
              {"broadcast", 0, ONE},         {"gather", 1, BLOCKS},     {"reduce", 0, ONE},
              {"reduce_scatter", 1, BLOCKS}, {"scatter", 1, BLOCKS},    {"sendrecv", 0, ONE},
              {"allgatherv", 0, BLOCKS},     {"alltoallv", 0, BLOCKS},  {"reducescatterv", 0, BLOCKS}};
enum { kNumColls = sizeof(kColls) / sizeof(kColls[0]), kRoot = 0 };

/* The variable-count collectives split a size between ranks by a pattern of weights (--counts),
 * as the perf programs do (benchmarks/perf/perf_counts.cc: keep the two in step): rank p's block
 * is total*w[p]/W rounded down, and what rounding left goes to the first of the heaviest blocks,
 * so the blocks add up to the size. All-to-all: rank `from` sends rank `to` block (from+to)%n. */
enum Pattern { EVEN, LINEAR, ZEROS, ONE_RANK };
static const char* const kPatterns[] = {"even", "linear", "zeros", "one"};

static size_t weightOf(enum Pattern p, int rank) {
  switch (p) {
    case LINEAR:
      return (size_t)rank + 1;
    case ZEROS:
      return rank % 2 == 0 ? 1 : 0;
    case ONE_RANK:
      return rank == 0 ? 1 : 0;
    default:
      return 1;
  }
}

static void splitCounts(size_t total, enum Pattern p, int n, int* counts) {
  size_t weights = 0, given = 0;
  int heaviest = 0;
  for (int r = 0; r < n; ++r) weights += weightOf(p, r);
  for (int r = 0; r < n; ++r) {
    counts[r] = (int)((long double)total * weightOf(p, r) / weights);
    given += (size_t)counts[r];
    if (weightOf(p, r) > weightOf(p, heaviest)) heaviest = r;
  }
  counts[heaviest] += (int)(total - given);
}

static void packed(const int* counts, int n, int* displs) {
  int at = 0;
  for (int r = 0; r < n; ++r) displs[r] = at, at += counts[r];
}

struct Call {
  enum Coll coll;
  float* send;
  float* recv;
  size_t count; /* elements of the larger buffer */
  size_t per;   /* elements of one rank's block (= count when not split) */
  int rank, nranks;
  /* Variable counts (int, as MPI takes them): the split of count, its packed displacements, and
   * this rank's all-to-all arrays. */
  int *split, *offsets, *sendcounts, *sdispls, *recvcounts, *rdispls;
};

/* Fills the variable-count arrays of a call whose count is set. */
static void layoutVariable(struct Call* c, enum Pattern pattern) {
  int n = c->nranks;
  splitCounts(c->count, pattern, n, c->split);
  packed(c->split, n, c->offsets);
  for (int p = 0; p < n; ++p) {
    c->sendcounts[p] = c->split[(c->rank + p) % n];
    c->recvcounts[p] = c->split[(p + c->rank) % n];
  }
  packed(c->sendcounts, n, c->sdispls);
  packed(c->recvcounts, n, c->rdispls);
}

/* Where rank `from`'s block for rank `to` starts in from's input (all-to-all). */
static size_t sentFrom(const struct Call* c, int from, int to) {
  size_t at = 0;
  for (int q = 0; q < to; ++q) at += (size_t)c->split[(from + q) % c->nranks];
  return at;
}

/* The rank whose region of `displs`/`counts` holds element i (the regions are packed in rank order). */
static int regionOf(const int* displs, const int* counts, int n, size_t i) {
  for (int p = 0; p < n; ++p)
    if (i >= (size_t)displs[p] && i < (size_t)displs[p] + (size_t)counts[p]) return p;
  return n - 1;
}

/* One call, out of place where MPI allows it; only the root's buffers count where MPI ignores the others. */
static void runOnce(const struct Call* c) {
  int per = (int)c->per, count = (int)c->count, root = c->rank == kRoot;
  switch (c->coll) {
    case ALL_REDUCE:
      MPI_Allreduce(c->send, c->recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case ALL_GATHER:
      MPI_Allgather(c->send, per, MPI_FLOAT, c->recv, per, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    case ALLTOALL:
      MPI_Alltoall(c->send, per, MPI_FLOAT, c->recv, per, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    /* MPI_Bcast has one buffer: the root sends from its input, the others receive into their output. */
    case BROADCAST:
      MPI_Bcast(root ? c->send : c->recv, count, MPI_FLOAT, kRoot, MPI_COMM_WORLD);
      break;
    case GATHER:
      MPI_Gather(c->send, per, MPI_FLOAT, root ? c->recv : NULL, per, MPI_FLOAT, kRoot, MPI_COMM_WORLD);
      break;
    case REDUCE:
      MPI_Reduce(c->send, root ? c->recv : NULL, count, MPI_FLOAT, MPI_SUM, kRoot, MPI_COMM_WORLD);
      break;
    case REDUCE_SCATTER:
      MPI_Reduce_scatter_block(c->send, c->recv, per, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case SCATTER:
      MPI_Scatter(root ? c->send : NULL, per, MPI_FLOAT, c->recv, per, MPI_FLOAT, kRoot, MPI_COMM_WORLD);
      break;
    case SENDRECV:
      MPI_Sendrecv(c->send, count, MPI_FLOAT, (c->rank + 1) % c->nranks, 0, c->recv, count, MPI_FLOAT,
                   (c->rank - 1 + c->nranks) % c->nranks, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      break;
    case ALLGATHERV:
      MPI_Allgatherv(c->send, c->split[c->rank], MPI_FLOAT, c->recv, c->split, c->offsets, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    case ALLTOALLV:
      MPI_Alltoallv(c->send, c->sendcounts, c->sdispls, MPI_FLOAT, c->recv, c->recvcounts, c->rdispls, MPI_FLOAT,
                    MPI_COMM_WORLD);
      break;
    case REDUCESCATTERV:
      MPI_Reduce_scatter(c->send, c->recv, c->split, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
  }
}

/* The count argument of the call, as the perf programs print it. */
static size_t paramCount(const struct Call* c) { return kColls[c->coll].split ? c->per : c->count; }

/* The value rank r contributes at input index i when checking: small integers, so sums are exact. */
static float checkValue(int rank, size_t i) { return (float)((i * 5 + (size_t)rank * 3) % 9); }

/* Where output element i of this rank comes from: (source rank or -1 for the sum over all, input
 * index); returns how many output elements this rank has (0 off the root of gather and reduce). */
static size_t outputSource(const struct Call* c, size_t i, int* src, size_t* idx) {
  size_t per = c->per, count = c->count;
  int n = c->nranks, r = c->rank;
  *src = -1, *idx = i;
  switch (c->coll) {
    case ALL_REDUCE:
      return count;
    case REDUCE:
      return r == kRoot ? count : 0;
    case BROADCAST:
      *src = kRoot;
      return r == kRoot ? 0 : count; /* the root's data stays in its input */
    case ALL_GATHER:
      *src = (int)(i / per), *idx = i % per;
      return count;
    case GATHER:
      *src = (int)(i / per), *idx = i % per;
      return r == kRoot ? count : 0;
    case ALLTOALL:
      *src = (int)(i / per), *idx = (size_t)r * per + i % per;
      return count;
    case REDUCE_SCATTER:
      *idx = (size_t)r * per + i;
      return per;
    case SCATTER:
      *src = kRoot, *idx = (size_t)r * per + i;
      return per;
    case SENDRECV:
      *src = (r - 1 + n) % n;
      return count;
    case ALLGATHERV:
      *src = regionOf(c->offsets, c->split, n, i), *idx = i - (size_t)c->offsets[*src];
      return count;
    case ALLTOALLV:
      *src = regionOf(c->rdispls, c->recvcounts, n, i);
      *idx = sentFrom(c, *src, r) + (i - (size_t)c->rdispls[*src]);
      return count;
    case REDUCESCATTERV:
      *idx = (size_t)c->offsets[r] + i;
      return (size_t)c->split[r];
  }
  return 0;
}

static long long checkOnce(const struct Call* c) {
  long long wrong = 0, total = 0;
  int src;
  size_t idx;
  for (size_t i = 0; i < c->count; ++i) c->send[i] = checkValue(c->rank, i), c->recv[i] = -1.0f;
  runOnce(c);
  size_t outputs = outputSource(c, 0, &src, &idx);
  for (size_t i = 0; i < outputs; ++i) {
    outputSource(c, i, &src, &idx);
    float want = 0;
    for (int r = 0; r < c->nranks; ++r) want += src < 0 || src == r ? checkValue(r, idx) : 0.0f;
    if (c->recv[i] != want) ++wrong;
  }
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  for (size_t i = 0; i < c->count; ++i) c->send[i] = 1.0f;
  return total;
}

static void usage(FILE* out) {
  fprintf(out,
          "usage: mpi_bench [--coll NAME] --sizes B[,B...] [--iters N[,N...]] [--warmups N[,N...]] [--check 0|1]\n"
          "                 [--counts even|linear|zeros|one]\n"
          "Times one MPI collective (float32, sum, root 0; --counts: the variable-count ones' split\n"
          "between ranks, default linear, as the perf programs'); NAME is one of");
  for (int k = 0; k < kNumColls; ++k) fprintf(out, " %s", kColls[k].name);
  fprintf(out, " (default all_reduce). See the comment at the top of the source.\n");
}

static int findColl(const char* name) {
  for (int k = 0; k < kNumColls; ++k) {
    if (strcmp(kColls[k].name, name) == 0) return k;
  }
  return -1;
}

static double busFactor(enum Coll coll, int n) {
  switch (kColls[coll].factor) {
    case TWICE:
      return 2.0 * (n - 1) / n;
    case BLOCKS:
      return (double)(n - 1) / n;
    default:
      return 1.0;
  }
}

/* Elements of the larger buffer and of one block for a size in bytes (collectives.py's effective_size). */
static void blockCount(enum Coll coll, size_t bytes, int n, size_t* count, size_t* per) {
  size_t unit = kColls[coll].split ? (size_t)n : 1;
  size_t blocks = bytes / 4 / unit;
  if (blocks == 0) blocks = 1;
  *count = blocks * unit;
  *per = kColls[coll].split ? blocks : *count;
}

int main(int argc, char** argv) {
  size_t sizes[MAX_SIZES], iters[MAX_SIZES], warmups[MAX_SIZES];
  int nsizes = 0, niters = 1, nwarmups = 1, check = 0, coll = ALL_REDUCE, pattern = LINEAR;
  iters[0] = 20;
  warmups[0] = 5;
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      if (rank == 0) usage(stdout);
      MPI_Finalize();
      return 0;
    } else if (strcmp(a, "--coll") == 0 && v) {
      bad = (coll = findColl(v)) < 0;
    } else if (strcmp(a, "--sizes") == 0 && v) {
      bad = (nsizes = parseList(v, sizes, 1)) <= 0;
    } else if (strcmp(a, "--iters") == 0 && v) {
      bad = (niters = parseList(v, iters, 0)) <= 0;
    } else if (strcmp(a, "--warmups") == 0 && v) {
      bad = (nwarmups = parseList(v, warmups, 0)) <= 0;
    } else if (strcmp(a, "--check") == 0 && v) {
      check = atoi(v);
    } else if (strcmp(a, "--counts") == 0 && v) {
      for (pattern = 0; pattern < 4 && strcmp(kPatterns[pattern], v) != 0; ++pattern) {
      }
      bad = pattern == 4;
    } else {
      bad = 1;
    }
    if (bad) {
      if (rank == 0) {
        fprintf(stderr, "mpi_bench: bad argument '%s'%s%s\n", a, v ? " " : "", v ? v : "");
        usage(stderr);
      }
      MPI_Finalize();
      return 2;
    }
    ++i;
  }
  if (nsizes == 0 || (niters != 1 && niters != nsizes) || (nwarmups != 1 && nwarmups != nsizes)) {
    if (rank == 0) {
      fprintf(stderr, "mpi_bench: need --sizes, and one --iters/--warmups value or one per size\n");
      usage(stderr);
    }
    MPI_Finalize();
    return 2;
  }
  size_t maxCount = 1, count, per;
  for (int s = 0; s < nsizes; ++s) {
    blockCount((enum Coll)coll, sizes[s], nranks, &count, &per);
    maxCount = count > maxCount ? count : maxCount;
  }
  float* send = malloc(maxCount * sizeof(float));
  float* recv = malloc(maxCount * sizeof(float));
  int* arrays = malloc(6 * (size_t)nranks * sizeof(int));
  if (send == NULL || recv == NULL || arrays == NULL) {
    fprintf(stderr, "mpi_bench: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < maxCount; ++i) send[i] = 1.0f, recv[i] = 0.0f;

  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    char* nl = strchr(version, '\n');
    if (nl) *nl = '\0';
    char* comma = strchr(version, ',');
    if (comma) *comma = '\0';
    printf("# mpi_bench: %s, %s, %d ranks, float32 sum, root 0\n", kColls[coll].name, version, nranks);
    if (coll >= ALLGATHERV) printf("# counts per rank: %s\n", kPatterns[pattern]);
    printf("# %10s  %12s  %8s  %10s  %11s  %11s  %6s\n", "size(B)", "count", "iters", "time(us)", "algbw(GB/s)",
           "busbw(GB/s)", "#wrong");
    fflush(stdout);
  }
  for (int s = 0; s < nsizes; ++s) {
    struct Call c = {.coll = (enum Coll)coll, .send = send, .recv = recv, .rank = rank, .nranks = nranks};
    int** variable[] = {&c.split, &c.offsets, &c.sendcounts, &c.sdispls, &c.recvcounts, &c.rdispls};
    for (int k = 0; k < 6; ++k) *variable[k] = arrays + k * nranks;
    blockCount(c.coll, sizes[s], nranks, &c.count, &c.per);
    if (c.coll >= ALLGATHERV) layoutVariable(&c, (enum Pattern)pattern);
    size_t it = iters[niters == 1 ? 0 : s], wu = warmups[nwarmups == 1 ? 0 : s];
    if (it == 0) it = 1;
    for (size_t w = 0; w < wu; ++w) runOnce(&c);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (size_t k = 0; k < it; ++k) runOnce(&c);
    double local = (MPI_Wtime() - t0) / (double)it, sec = 0;
    MPI_Allreduce(&local, &sec, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    long long wrong = check ? checkOnce(&c) : -1;
    double algbw = sec > 0 ? (double)(c.count * 4) / 1e9 / sec : 0;
    double busbw = algbw * busFactor(c.coll, nranks);
    if (rank == 0) {
      printf("%12zu  %12zu  %8zu  %10.3f  %11.3f  %11.3f  %6lld\n", c.count * 4, paramCount(&c), it, sec * 1e6, algbw,
             busbw, wrong);
      fflush(stdout);
    }
  }
  free(send);
  free(recv);
  free(arrays);
  MPI_Finalize();
  return 0;
}
