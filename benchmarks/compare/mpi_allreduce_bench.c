/*
 * Float32 sum all-reduce through MPI_Allreduce, timed the way the *_perf programs time
 * libcollective: per size, warm-up calls, a barrier, then `iters` out-of-place calls back to back;
 * the time is the average per call, the maximum over ranks. Built by compare.py with mpicc.
 *
 *   mpirun -np 2 mpi_allreduce_bench --sizes 8,65536 --iters 1000,200 --warmups 5 [--check 1]
 *
 * --sizes are bytes (K/M/G suffixes allowed); --iters and --warmups take one value for every size
 * or one per size. Output: '#' comment lines, then one row per size with the columns
 *   size(B) count iters time(us) algbw(GB/s) busbw(GB/s) #wrong
 * where busbw = algbw * 2(n-1)/n as in nccl-tests, and #wrong counts wrong elements of one
 * checked call (-1 when not checked).
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
    case 'k': case 'K': v <<= 10; ++end; break;
    case 'm': case 'M': v <<= 20; ++end; break;
    case 'g': case 'G': v <<= 30; ++end; break;
    default: break;
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

static void usage(FILE* out) {
  fprintf(out,
          "usage: mpi_allreduce_bench --sizes B[,B...] [--iters N[,N...]] [--warmups N[,N...]] [--check 0|1]\n"
          "Times MPI_Allreduce (float32, sum, out-of-place); see the comment at the top of the source.\n");
}

/* The value rank r contributes at index i when checking: small integers, so sums are exact. */
static float checkValue(int rank, size_t i) { return (float)((i * 5 + (size_t)rank * 3) % 9); }

static long long checkOnce(float* send, float* recv, size_t count, int rank, int nranks) {
  long long wrong = 0, total = 0;
  for (size_t i = 0; i < count; ++i) send[i] = checkValue(rank, i);
  for (size_t i = 0; i < count; ++i) recv[i] = -1.0f;
  MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < nranks; ++r) want += checkValue(r, i);
    if (recv[i] != want) ++wrong;
  }
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

int main(int argc, char** argv) {
  size_t sizes[MAX_SIZES], iters[MAX_SIZES], warmups[MAX_SIZES];
  int nsizes = 0, niters = 1, nwarmups = 1, check = 0;
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
    } else if (strcmp(a, "--sizes") == 0 && v) {
      bad = (nsizes = parseList(v, sizes, 1)) <= 0;
    } else if (strcmp(a, "--iters") == 0 && v) {
      bad = (niters = parseList(v, iters, 0)) <= 0;
    } else if (strcmp(a, "--warmups") == 0 && v) {
      bad = (nwarmups = parseList(v, warmups, 0)) <= 0;
    } else if (strcmp(a, "--check") == 0 && v) {
      check = atoi(v);
    } else {
      bad = 1;
    }
    if (bad) {
      if (rank == 0) {
        fprintf(stderr, "mpi_allreduce_bench: bad argument '%s'\n", a);
        usage(stderr);
      }
      MPI_Finalize();
      return 2;
    }
    ++i;
  }
  if (nsizes == 0 || (niters != 1 && niters != nsizes) || (nwarmups != 1 && nwarmups != nsizes)) {
    if (rank == 0) {
      fprintf(stderr, "mpi_allreduce_bench: need --sizes, and one --iters/--warmups value or one per size\n");
      usage(stderr);
    }
    MPI_Finalize();
    return 2;
  }
  size_t maxCount = 1;
  for (int s = 0; s < nsizes; ++s) maxCount = sizes[s] / 4 > maxCount ? sizes[s] / 4 : maxCount;
  float* send = malloc(maxCount * sizeof(float));
  float* recv = malloc(maxCount * sizeof(float));
  if (send == NULL || recv == NULL) {
    fprintf(stderr, "mpi_allreduce_bench: out of memory\n");
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
    printf("# mpi_allreduce_bench: %s, %d ranks, float32 sum, out-of-place\n", version, nranks);
    printf("# %10s  %12s  %8s  %10s  %11s  %11s  %6s\n", "size(B)", "count", "iters", "time(us)", "algbw(GB/s)",
           "busbw(GB/s)", "#wrong");
    fflush(stdout);
  }
  for (int s = 0; s < nsizes; ++s) {
    size_t count = sizes[s] / 4;
    size_t it = iters[niters == 1 ? 0 : s], wu = warmups[nwarmups == 1 ? 0 : s];
    if (it == 0) it = 1;
    for (size_t w = 0; w < wu; ++w) MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (size_t k = 0; k < it; ++k) MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double local = (MPI_Wtime() - t0) / (double)it, sec = 0;
    MPI_Allreduce(&local, &sec, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    long long wrong = check ? checkOnce(send, recv, count, rank, nranks) : -1;
    if (check) {
      for (size_t i = 0; i < count; ++i) send[i] = 1.0f;
    }
    double algbw = sec > 0 ? (double)(count * 4) / 1e9 / sec : 0;
    double busbw = algbw * 2.0 * (nranks - 1) / nranks;
    if (rank == 0) {
      printf("%12zu  %12zu  %8zu  %10.2f  %11.3f  %11.3f  %6lld\n", count * 4, count, it, sec * 1e6, algbw, busbw,
             wrong);
      fflush(stdout);
    }
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
