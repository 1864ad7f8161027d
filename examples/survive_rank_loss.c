/*
 * A job that goes on after losing a rank (docs/errors.md, "After a lost rank"):
 *
 *   collrun -n 4 --keep-going build/examples/survive_rank_loss --lose 2 --at 5
 *
 * Every rank sums a vector with the others each step. Rank --lose kills itself (SIGKILL) at step
 * --at. The survivors' call fails (collRemoteError: the library saw the process go); each one
 * shrinks the communicator (the survivors agree on who is gone: nobody passes a list here), drops
 * the old one and does the step again with the ranks that are left, then checks every sum.
 * --stop stops the rank (SIGSTOP) instead: the survivors' call then ends at their timeout, 5 s
 * here (collTimeout, with the hang report naming the stopped rank), and the shrink waits
 * COLL_AGREE_TIMEOUT_MS for it before leaving it out. collrun's --keep-going lets the survivors
 * run on when a rank dies.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collective.h"

#define COUNT 4096
#define MAX_RANKS 1024

static int fail(const char* what, collComm_t comm) {
  fprintf(stderr, "%s: %s\n", what, collGetLastError(comm));
  return 1;
}

/* origin[i]: the rank the i-th member had in the first communicator; drops the excluded ones. */
static int dropExcluded(collComm_t shrunk, int* origin, int members) {
  int excluded[MAX_RANKS], count = 0, kept = 0;
  collCommExcludedRanks(shrunk, excluded, MAX_RANKS, &count);
  for (int i = 0; i < members; ++i) {
    int out = 0;
    for (int e = 0; e < count; ++e) out |= excluded[e] == i;
    if (!out) origin[kept++] = origin[i];
  }
  return kept;
}

int main(int argc, char** argv) {
  int lose = 2, at = 5, steps = 10, stop = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--lose") && i + 1 < argc) lose = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--at") && i + 1 < argc) at = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--stop")) stop = 1;
    else {
      fprintf(stderr, "usage: %s [--lose RANK] [--at STEP] [--steps N] [--stop]\n", argv[0]);
      return 2;
    }
  }
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = 5000;
  collComm_t comm = NULL;
  if (collCommInitFromEnv(&comm, &config) != collSuccess) return fail("init", NULL);
  int rank = 0, members = 0, origin[MAX_RANKS];
  collCommUserRank(comm, &rank);
  collCommCount(comm, &members);
  const int me = rank; /* this process's rank in the first communicator */
  for (int i = 0; i < members && i < MAX_RANKS; ++i) origin[i] = i;
  static float data[COUNT];

  for (int step = 0; step < steps; ++step) {
    if (me == lose && step == at) kill(getpid(), stop ? SIGSTOP : SIGKILL);
    for (int i = 0; i < COUNT; ++i) data[i] = (float)(me + 1);
    collResult_t rc = collAllReduce(data, data, COUNT, collFloat, collSum, comm, NULL);
    if (rc != collSuccess) {
      printf("rank %d: step %d failed (%s): %.160s\n", me, step, collGetErrorString(rc), collGetLastError(comm));
      collComm_t shrunk = NULL;
      if (collCommShrink(comm, NULL, 0, &shrunk, NULL, COLL_SHRINK_ABORT) != collSuccess)
        return fail("collCommShrink", comm);
      members = dropExcluded(shrunk, origin, members);
      collCommDestroy(comm);
      comm = shrunk;
      collCommUserRank(comm, &rank);
      printf("rank %d: going on as rank %d of %d\n", me, rank, members);
      --step; /* the step again, with the ranks that are left */
      continue;
    }
    float expected = 0;
    for (int i = 0; i < members; ++i) expected += (float)(origin[i] + 1);
    if (data[0] != expected || data[COUNT - 1] != expected) {
      fprintf(stderr, "rank %d: step %d summed %g, expected %g\n", me, step, data[0], expected);
      return 1;
    }
  }
  printf("rank %d: done, %d steps, the last with %d ranks\n", me, steps, members);
  collCommDestroy(comm);
  return 0;
}
