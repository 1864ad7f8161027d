/* A C99 program built against the installed library with pkg-config: version, init from the
 * launcher environment (one rank), an all-reduce in two types, destroy. */
#include <collective.h>
#include <stdio.h>

#define CHECK(call)                                                                             \
  do {                                                                                          \
    collResult_t res_ = (call);                                                                 \
    if (res_ != collSuccess) {                                                                  \
      fprintf(stderr, "%s: %s: %s\n", #call, collGetErrorString(res_), collGetLastError(NULL)); \
      return 1;                                                                                 \
    }                                                                                           \
  } while (0)

int main(void) {
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  collComm_t comm = NULL;
  float in[5] = {1.0f, -2.5f, 3.0f, 4.25f, 1e6f};
  float out[5] = {0};
  int ints[3] = {7, -1, 42};
  int version = 0, nranks = 0, rank = -1, i;

  CHECK(collGetVersion(&version));
  if (version != COLL_VERSION_CODE) {
    fprintf(stderr, "library version %d, header %d\n", version, COLL_VERSION_CODE);
    return 1;
  }
  config.timeoutMs = 60000;
  CHECK(collCommInitFromEnv(&comm, &config));
  CHECK(collCommCount(comm, &nranks));
  CHECK(collCommUserRank(comm, &rank));
  if (nranks != 1 || rank != 0) {
    fprintf(stderr, "expected rank 0 of 1, got rank %d of %d\n", rank, nranks);
    return 1;
  }
  CHECK(collAllReduce(in, out, 5, collFloat, collSum, comm, NULL));
  for (i = 0; i < 5; ++i)
    if (out[i] != in[i]) {
      fprintf(stderr, "float all-reduce: out[%d] = %g, expected %g\n", i, out[i], in[i]);
      return 1;
    }
  CHECK(collAllReduce(ints, ints, 3, collInt32, collMax, comm, NULL)); /* in place */
  if (ints[0] != 7 || ints[1] != -1 || ints[2] != 42) {
    fprintf(stderr, "in-place int all-reduce changed the data: %d %d %d\n", ints[0], ints[1], ints[2]);
    return 1;
  }
  CHECK(collCommDestroy(comm));
  printf("c99 consumer: ok\n");
  return 0;
}
