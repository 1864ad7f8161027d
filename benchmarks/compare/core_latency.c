/* The time a cache line takes to go from one CPU to another and back: two threads pinned to
 * CPUs A and B (default 0 and 1) take turns writing a counter the other waits for. Prints the
 * round trip and half of it (one hand-off), in nanoseconds, once per second for --seconds.
 *
 * Why: every small collective on one host is a chain of such hand-offs, so this bounds what an
 * 8-byte call can cost, and on a virtual machine it shows whether the vCPUs sit on one physical
 * core (tens of ns) or apart (well over 100 ns), which the hypervisor may change from second to
 * second (docs/performance.md).
 *
 * build: cc -O2 -pthread benchmarks/compare/core_latency.c -o core_latency
 * usage: core_latency [CPU_A CPU_B [SECONDS]] */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Atomic long turn __attribute__((aligned(64)));
static const long kRounds = 1000000;

static int pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void* answer(void* arg) {
  if (pin(*(int*)arg) != 0) {
    fprintf(stderr, "core_latency: cannot pin to CPU %d\n", *(int*)arg);
    exit(1);
  }
  for (long i = 1; i <= kRounds; i++) {
    while (atomic_load_explicit(&turn, memory_order_acquire) != 2 * i - 1) {
    }
    atomic_store_explicit(&turn, 2 * i, memory_order_release);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int a = argc > 2 ? atoi(argv[1]) : 0, b = argc > 2 ? atoi(argv[2]) : 1;
  int seconds = argc > 3 ? atoi(argv[3]) : 5;
  if (pin(a) != 0) {
    fprintf(stderr, "core_latency: cannot pin to CPU %d\n", a);
    return 1;
  }
  for (int s = 0; s < seconds; s++) {
    atomic_store(&turn, 0);
    pthread_t other;
    pthread_create(&other, NULL, answer, &b);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 1; i <= kRounds; i++) {
      atomic_store_explicit(&turn, 2 * i - 1, memory_order_release);
      while (atomic_load_explicit(&turn, memory_order_acquire) != 2 * i) {
      }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(other, NULL);
    double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / kRounds;
    printf("CPU %d <-> CPU %d: round trip %.1f ns, one hand-off %.1f ns\n", a, b, ns, ns / 2);
    fflush(stdout);
    struct timespec pause = {0, 700 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  return 0;
}
