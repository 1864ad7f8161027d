/* Four ways to move an all-to-all's blocks between processes of one host, timed side by side,
 * without the library: what a large all-to-all can gain by its copy path alone.
 *
 *   cma            each rank reads its block of every peer's send buffer with process_vm_readv
 *                  straight into its receive buffer (one copy; what the library's direct reads
 *                  and Open MPI's CMA path do), then stays until every peer has read its buffer
 *   stage-memcpy   each rank copies its outgoing blocks into its own shared staging area, and
 *                  every receiver copies its block out (two copies, no page pinning; the sender
 *                  leaves without waiting for its readers, who only hold up its next call)
 *   stage-stream   the same, with the copy into the staging area in streaming stores
 *   cma-stream     process_vm_readv a chunk at a time into a cache-sized scratch buffer, then
 *                  streaming stores from there into the receive buffer (the kernel's copy lands
 *                  in cache, and the receive buffer is written without reading it first)
 *
 * Why: process_vm_readv pins each 4 KiB page of the peer's buffer before it copies, and ran at
 * about half of memcpy's rate in one process (docs/performance.md), so a path that copies twice
 * without pinning might beat it. This measures whether it does, in the same shape as the
 * comparison's all-to-all: SIZE bytes of send buffer per rank, SIZE/RANKS to each rank, ranks
 * unbound, forked afresh for every run, the strategies interleaved in rotating order.
 *
 * Every run checks every received word against what its sender wrote; a wrong word, a failed
 * copy or a peer that stops answering for 30 s ends the program with status 1.
 *
 * build: cc -O2 benchmarks/compare/alltoall_copy_paths.c -o alltoall_copy_paths (built with the rest)
 * usage: alltoall_copy_paths [--ranks N] [--bytes SIZE] [--iters K] [--rounds R] [--chunk BYTES] */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { kMaxRanks = 16, kWarmups = 5 };
/* In the order of the header's list and of the printed columns. */
enum strategy { kCma, kStageMemcpy, kStageStream, kCmaStream, kStrategies };
static const char* const kNames[kStrategies] = {"cma", "stage-memcpy", "stage-stream", "cma-stream"};
static const double kPeerTimeoutSeconds = 30.0;

struct options {
  int ranks;
  size_t bytes;
  int iters;
  int rounds;
  size_t chunk;
};

/* One cache line per counter, so ranks polling one counter do not disturb the writer of another. */
struct padded_counter {
  _Atomic long value;
  char pad[64 - sizeof(long)];
};

/* Shared by every rank of a run (an anonymous shared mapping made before the fork). */
struct control {
  struct padded_counter posted[kMaxRanks]; /* call number whose blocks this rank has made readable */
  struct padded_counter done[kMaxRanks];   /* call number whose blocks this rank has read */
  uintptr_t send_address[kMaxRanks];
  pid_t pid[kMaxRanks];
  struct padded_counter started; /* ranks that have published their send buffer */
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void fail(const char* what) {
  fprintf(stderr, "alltoall_copy_paths: %s\n", what);
  exit(1);
}

/* Streaming (non-temporal) stores where the compiler offers them; memcpy elsewhere. */
static void stream_copy(void* dst, const void* src, size_t bytes) {
#ifdef __SSE2__
  if (((uintptr_t)dst & 15) == 0 && bytes % 64 == 0) {
    __m128i* d = (__m128i*)dst;
    const __m128i* s = (const __m128i*)src;
    for (size_t i = 0; i < bytes / 16; i += 4) {
      __m128i a = _mm_loadu_si128(s + i), b = _mm_loadu_si128(s + i + 1);
      __m128i c = _mm_loadu_si128(s + i + 2), e = _mm_loadu_si128(s + i + 3);
      _mm_stream_si128(d + i, a);
      _mm_stream_si128(d + i + 1, b);
      _mm_stream_si128(d + i + 2, c);
      _mm_stream_si128(d + i + 3, e);
    }
    _mm_sfence();
    return;
  }
#endif
  memcpy(dst, src, bytes);
}

/* Waits until *counter reaches value, yielding the CPU: ranks outnumber cores here. */
static void wait_for(_Atomic long* counter, long value) {
  double deadline = 0;
  for (unsigned spins = 0; atomic_load_explicit(counter, memory_order_acquire) < value; spins++) {
    if (spins < 100) continue;
    sched_yield();
    if (spins % 4096 == 0) {
      if (deadline == 0)
        deadline = now() + kPeerTimeoutSeconds;
      else if (now() > deadline)
        fail("a peer stopped answering for 30 s");
    }
  }
}

static void read_peer(pid_t pid, uintptr_t remote, void* local, size_t bytes) {
  size_t moved = 0;
  while (moved < bytes) {
    struct iovec local_iov = {(char*)local + moved, bytes - moved};
    struct iovec remote_iov = {(void*)(remote + moved), bytes - moved};
    ssize_t got = process_vm_readv(pid, &local_iov, 1, &remote_iov, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      perror("alltoall_copy_paths: process_vm_readv (a kernel without cross-memory attach, or ptrace denied?)");
      exit(1);
    }
    moved += (size_t)got;
  }
}

/* Word i of the block rank `from` sends to rank `to`: distinct per pair and per position, so a
 * block from the wrong peer or at the wrong offset cannot pass the check. */
static uint32_t expected_word(int from, int to, size_t i) {
  return ((uint32_t)from << 28) ^ ((uint32_t)to << 24) ^ (uint32_t)(i * 2654435761u);
}

/* One rank's whole run: warm-ups, then `iters` timed calls; returns seconds per call. */
static double run_rank(const struct options* o, enum strategy strategy, int rank, struct control* ctl, char* staging,
                       size_t block) {
  const int n = o->ranks;
  uint32_t* send = aligned_alloc(4096, o->bytes);
  char* recv = aligned_alloc(4096, o->bytes);
  char* scratch = aligned_alloc(4096, o->chunk);
  if (!send || !recv || !scratch) fail("out of memory");
  for (int to = 0; to < n; to++)
    for (size_t i = 0; i < block / 4; i++) send[to * (block / 4) + i] = expected_word(rank, to, i);
  memset(recv, 0xA5, o->bytes); /* poisoned: a block never written fails the check */
  ctl->send_address[rank] = (uintptr_t)send;
  ctl->pid[rank] = getpid();
  atomic_fetch_add_explicit(&ctl->started.value, 1, memory_order_acq_rel);
  wait_for(&ctl->started.value, n); /* a rank that failed before this point ends the run, not hangs it */

  char* own_stage = staging ? staging + (size_t)rank * n * block : NULL;
  double start = 0;
  for (long call = 1; call <= kWarmups + o->iters; call++) {
    if (call == kWarmups + 1) start = now();
    if (strategy == kCma || strategy == kCmaStream) {
      memcpy(recv + rank * block, (char*)send + rank * block, block);
      atomic_store_explicit(&ctl->posted[rank].value, call, memory_order_release);
      for (int k = 1; k < n; k++) {
        int peer = (rank + k) % n;
        wait_for(&ctl->posted[peer].value, call);
        uintptr_t remote = ctl->send_address[peer] + (uintptr_t)rank * block;
        if (strategy == kCma) {
          read_peer(ctl->pid[peer], remote, recv + peer * block, block);
        } else {
          for (size_t at = 0; at < block; at += o->chunk) {
            size_t part = block - at < o->chunk ? block - at : o->chunk;
            read_peer(ctl->pid[peer], remote + at, scratch, part);
            stream_copy(recv + peer * block + at, scratch, part);
          }
        }
      }
      atomic_store_explicit(&ctl->done[rank].value, call, memory_order_release);
      for (int peer = 0; peer < n; peer++)
        if (peer != rank) wait_for(&ctl->done[peer].value, call);
    } else {
      /* The staging area still holds last call's blocks until every peer has read them. */
      for (int peer = 0; peer < n; peer++)
        if (peer != rank) wait_for(&ctl->done[peer].value, call - 1);
      for (int k = 1; k < n; k++) {
        int peer = (rank + k) % n;
        const char* from = (const char*)send + peer * block;
        if (strategy == kStageStream)
          stream_copy(own_stage + peer * block, from, block);
        else
          memcpy(own_stage + peer * block, from, block);
      }
      atomic_store_explicit(&ctl->posted[rank].value, call, memory_order_release);
      memcpy(recv + rank * block, (char*)send + rank * block, block);
      for (int k = 1; k < n; k++) {
        int peer = (rank + k) % n;
        wait_for(&ctl->posted[peer].value, call);
        memcpy(recv + peer * block, staging + ((size_t)peer * n + rank) * block, block);
      }
      atomic_store_explicit(&ctl->done[rank].value, call, memory_order_release);
    }
  }
  double per_call = (now() - start) / o->iters;
  const uint32_t* words = (const uint32_t*)recv;
  for (int from = 0; from < n; from++)
    for (size_t i = 0; i < block / 4; i++)
      if (words[from * (block / 4) + i] != expected_word(from, rank, i)) {
        fprintf(stderr, "alltoall_copy_paths: %s: rank %d, word %zu from rank %d is wrong\n", kNames[strategy], rank, i,
                from);
        exit(1);
      }
  /* Everyone has read everything by the last call's handshake except in the staging strategies,
   * where a reader may still copy from this rank's staging area: it is shared memory, which
   * outlives this process, so leaving is safe. */
  return per_call;
}

/* Forks the ranks for one run of one strategy; returns rank 0's seconds per call. */
static double run_once(const struct options* o, enum strategy strategy) {
  const size_t block = o->bytes / (size_t)o->ranks;
  struct control* ctl = mmap(NULL, sizeof *ctl, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  double* result = mmap(NULL, sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  size_t staging_bytes = (size_t)o->ranks * o->ranks * block;
  char* staging = NULL;
  if (ctl == MAP_FAILED || result == MAP_FAILED) fail("cannot map shared memory");
  if (strategy == kStageMemcpy || strategy == kStageStream) {
    staging = mmap(NULL, staging_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (staging == MAP_FAILED) fail("cannot map the staging area");
  }
  fflush(stdout); /* or each child would print what the parent had buffered again when it exits */
  fflush(stderr);
  pid_t children[kMaxRanks];
  for (int rank = 0; rank < o->ranks; rank++) {
    children[rank] = fork();
    if (children[rank] < 0) fail("fork failed");
    if (children[rank] == 0) {
      double t = run_rank(o, strategy, rank, ctl, staging, block);
      if (rank == 0) *result = t;
      _exit(0);
    }
  }
  int failed = 0;
  for (int rank = 0; rank < o->ranks; rank++) {
    int status = 0;
    if (waitpid(children[rank], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  double t = *result;
  munmap(ctl, sizeof *ctl);
  munmap(result, sizeof(double));
  if (staging) munmap(staging, staging_bytes);
  if (failed) fail("a rank failed (see above)");
  return t;
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* values, int count) {
  qsort(values, (size_t)count, sizeof *values, compare_doubles);
  return count % 2 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2;
}

static size_t parse_bytes(const char* text) {
  char* end = NULL;
  unsigned long long value = strtoull(text, &end, 10);
  if (end == text) return 0;
  if (*end == 'K' || *end == 'k')
    value <<= 10, end++;
  else if (*end == 'M' || *end == 'm')
    value <<= 20, end++;
  else if (*end == 'G' || *end == 'g')
    value <<= 30, end++;
  return *end == '\0' ? (size_t)value : 0;
}

static void usage(FILE* to) {
  fprintf(to,
          "usage: alltoall_copy_paths [--ranks N] [--bytes SIZE] [--iters K] [--rounds R] [--chunk BYTES]\n"
          "  Times an all-to-all's copies between N forked processes four ways (cma, stage-memcpy,\n"
          "  stage-stream, cma-stream; see the source's header), R rounds in rotating order, K calls\n"
          "  a run, and prints microseconds per call, the medians, and each median over cma's.\n"
          "  --ranks N      processes (2-%d, default 4)\n"
          "  --bytes SIZE   each rank's send buffer, SIZE/N to each rank (default 4M; K, M, G suffixes)\n"
          "  --iters K      timed calls per run (default 200, after %d warm-ups)\n"
          "  --rounds R     runs of each strategy (default 5)\n"
          "  --chunk BYTES  cma-stream's scratch buffer (default 256K)\n",
          kMaxRanks, kWarmups);
}

int main(int argc, char** argv) {
  struct options o = {4, 4u << 20, 200, 5, 256u << 10};
  for (int i = 1; i < argc; i++) {
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "--ranks") && value) {
      o.ranks = atoi(value), i++;
    } else if (!strcmp(argv[i], "--bytes") && value) {
      o.bytes = parse_bytes(value), i++;
    } else if (!strcmp(argv[i], "--iters") && value) {
      o.iters = atoi(value), i++;
    } else if (!strcmp(argv[i], "--rounds") && value) {
      o.rounds = atoi(value), i++;
    } else if (!strcmp(argv[i], "--chunk") && value) {
      o.chunk = parse_bytes(value), i++;
    } else {
      fprintf(stderr, "alltoall_copy_paths: unknown or incomplete option '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (o.ranks < 2 || o.ranks > kMaxRanks || o.iters < 1 || o.rounds < 1 || o.rounds > 1000) {
    fprintf(stderr, "alltoall_copy_paths: --ranks must be 2-%d, --iters at least 1, --rounds 1-1000\n", kMaxRanks);
    return 2;
  }
  if (o.bytes == 0 || o.bytes % ((size_t)o.ranks * 64) != 0 || o.chunk < 4096 || o.chunk % 64 != 0) {
    fprintf(stderr,
            "alltoall_copy_paths: --bytes %zu must be a positive multiple of 64 * ranks (%d), --chunk %zu a "
            "multiple of 64 of at least 4096\n",
            o.bytes, o.ranks * 64, o.chunk);
    return 2;
  }
  if ((size_t)o.ranks * o.bytes > (1ull << 30)) {
    fprintf(stderr, "alltoall_copy_paths: the staging area (ranks x bytes = %zu) is over 1 GiB\n",
            (size_t)o.ranks * o.bytes);
    return 2;
  }
  /* Where Yama restricts ptrace to ancestors, let sibling ranks read this process's memory. */
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);

  printf("all-to-all of %zu bytes per rank (%zu to each), %d ranks, %d calls a run, %d rounds\n", o.bytes,
         o.bytes / (size_t)o.ranks, o.ranks, o.iters, o.rounds);
  printf("%5s", "round");
  for (int s = 0; s < kStrategies; s++) printf(" %13s", kNames[s]);
  printf("   (us per call)\n");
  double* times = calloc((size_t)kStrategies * (size_t)o.rounds, sizeof(double));
  if (!times) fail("out of memory");
  for (int round = 0; round < o.rounds; round++) {
    for (int k = 0; k < kStrategies; k++) {
      enum strategy s = (enum strategy)((k + round) % kStrategies);
      times[s * o.rounds + round] = run_once(&o, s) * 1e6;
    }
    printf("%5d", round + 1);
    for (int s = 0; s < kStrategies; s++) printf(" %13.1f", times[s * o.rounds + round]);
    printf("\n");
    fflush(stdout);
  }
  double medians[kStrategies];
  for (int s = 0; s < kStrategies; s++) medians[s] = median(times + s * o.rounds, o.rounds);
  printf("%5s", "med");
  for (int s = 0; s < kStrategies; s++) printf(" %13.1f", medians[s]);
  printf("\n%5s", "/cma");
  for (int s = 0; s < kStrategies; s++) printf(" %12.2fx", medians[0] / medians[s]);
  printf("   (cma's time over each: above 1 is faster than cma)\n");
  free(times);
  return 0;
}
