/*
 * libcollective ZeRO: optimizer-state, gradient and parameter sharding (ZeRO stages 1-3, as in
 * Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models") on
 * top of the communicator of collective.h.
 *
 * The model's parameters live in one flat buffer of `totalCount` elements, padded so that it
 * splits into `nranks` equal, aligned shards; rank r owns elements [r*shardCount, (r+1)*shardCount)
 * whatever the parameter boundaries are. Gradients are summed (or averaged) into their owner's
 * shard, each rank updates its own shard with a sharded optimizer step, and parameters are
 * gathered back from the owners. Every function works on any contiguous range of the flat buffer,
 * so a caller can reduce gradients bucket by bucket as backward produces them and gather one
 * layer's parameters at a time. Every function takes host memory, and its ...OnStream form device
 * memory with a stream (as the collectives of collective.h); see docs/zero.md.
 *
 * Every function returns collInvalidArgument with a message (collGetLastError) naming the
 * function, the value and what was expected on bad input, before touching a buffer or a peer.
 * The communication functions are collectives: every rank calls them with the same arguments
 * except the buffers.
 */
#ifndef COLLECTIVE_ZERO_H_
#define COLLECTIVE_ZERO_H_

#include <stddef.h>

#include "collective.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the flat buffer splits across ranks. */
typedef struct {
  size_t totalCount;  /* elements the caller's parameters occupy */
  size_t paddedCount; /* totalCount rounded up to nranks * alignment: the flat buffer's length */
  size_t shardCount;  /* paddedCount / nranks: every rank's shard has this many elements */
  size_t shardOffset; /* rank * shardCount: where this rank's shard starts in the flat buffer */
  int nranks;
  int rank;
} collZeroPartition_t;

/* The default shard alignment in elements: 16 elements = 64 bytes of float32, a cache line and a
 * whole number of 16-, 32- and 64-byte vectors. */
#define COLL_ZERO_DEFAULT_ALIGN 16

/* Fills *partition for a flat buffer of totalCount elements over nranks ranks, shards aligned to
 * alignElements (0: COLL_ZERO_DEFAULT_ALIGN). totalCount may be 0 (every shard is then empty). */
collResult_t collZeroPartitionInit(collZeroPartition_t* partition, size_t totalCount, int nranks, int rank,
                                   size_t alignElements);

/* Gradients of the flat range [begin, begin+count), which `bucket` holds (this rank's values),
 * reduced over every rank with op (collSum or collAvg) into the shards that own them: each rank's
 * gradShard (shardCount elements) receives its part of the range; ranks that own none of it only
 * send. accumulate == 0 overwrites that part of gradShard, 1 adds the reduced values to it (for
 * gradient accumulation over micro-batches). The owner's part of `bucket` is used as scratch
 * (overwritten); the rest of it is left alone. datatype: collFloat32, collFloat16 or collBfloat16. */
collResult_t collZeroReduceScatterRange(void* bucket, size_t begin, size_t count, void* gradShard, int accumulate,
                                        collDataType_t datatype, collRedOp_t op, const collZeroPartition_t* partition,
                                        collComm_t comm);

/* The whole flat gradient buffer (paddedCount elements) reduced into gradShard, in buckets of
 * bucketCount elements (0: one call), as collZeroReduceScatterRange. `grads` is scratch. */
collResult_t collZeroReduceScatterGradients(void* grads, void* gradShard, size_t bucketCount, int accumulate,
                                            collDataType_t datatype, collRedOp_t op,
                                            const collZeroPartition_t* partition, collComm_t comm);

/* The flat range [begin, begin+count) gathered from the shards that own it into `out` (count
 * elements) on every rank: the inverse of collZeroReduceScatterRange. */
collResult_t collZeroAllGatherRange(const void* shard, size_t begin, size_t count, void* out, collDataType_t datatype,
                                    const collZeroPartition_t* partition, collComm_t comm);

/* collZeroAllGatherRange for a shard kept elsewhere (stage 3's parameter offload keeps it in host
 * memory): this rank's piece of the range, the flat elements [max(begin, shardOffset),
 * min(begin+count, shardOffset+shardCount)), is already in `out` where the gather puts it, and
 * the call fills in the other ranks' pieces. */
collResult_t collZeroAllGatherRangeInPlace(size_t begin, size_t count, void* out, collDataType_t datatype,
                                           const collZeroPartition_t* partition, collComm_t comm);

/* Every rank's shard gathered into the whole flat buffer `params` (paddedCount elements), in
 * buckets of bucketCount elements (0: one call). In place when shard == params + shardOffset. */
collResult_t collZeroAllGatherParameters(const void* shard, void* params, size_t bucketCount, collDataType_t datatype,
                                         const collZeroPartition_t* partition, collComm_t comm);

/* The four functions above on device memory, ordered on `stream` (a cudaStream_t), as the
 * collectives of collective.h take a stream: every buffer is device (or managed) memory of the
 * stream's GPU, every inner collective and the layer's own accumulation and copies are enqueued on
 * the stream, and the call returns once they are. A NULL stream is the host function. A stream
 * where the build has no CUDA support or the process no GPU is collInvalidUsage; a buffer that is
 * not memory of the stream's GPU, collInvalidArgument naming it; both before anything is sent. */
collResult_t collZeroReduceScatterRangeOnStream(void* bucket, size_t begin, size_t count, void* gradShard,
                                                int accumulate, collDataType_t datatype, collRedOp_t op,
                                                const collZeroPartition_t* partition, collComm_t comm,
                                                collStream_t stream);
collResult_t collZeroReduceScatterGradientsOnStream(void* grads, void* gradShard, size_t bucketCount, int accumulate,
                                                    collDataType_t datatype, collRedOp_t op,
                                                    const collZeroPartition_t* partition, collComm_t comm,
                                                    collStream_t stream);
collResult_t collZeroAllGatherRangeOnStream(const void* shard, size_t begin, size_t count, void* out,
                                            collDataType_t datatype, const collZeroPartition_t* partition,
                                            collComm_t comm, collStream_t stream);
collResult_t collZeroAllGatherParametersOnStream(const void* shard, void* params, size_t bucketCount,
                                                 collDataType_t datatype, const collZeroPartition_t* partition,
                                                 collComm_t comm, collStream_t stream);
/* collZeroAllGatherRangeInPlace on device memory, with the same rules. */
collResult_t collZeroAllGatherRangeInPlaceOnStream(size_t begin, size_t count, void* out, collDataType_t datatype,
                                                   const collZeroPartition_t* partition, collComm_t comm,
                                                   collStream_t stream);

/* Sharded optimizer steps, as torch.optim defines them (so that a sharded run matches an unsharded
 * one): Adam (L2 weight decay added to the gradient), AdamW (decoupled weight decay) and SGD with
 * momentum, dampening and Nesterov. */
typedef enum { collZeroAdam = 0, collZeroAdamW = 1, collZeroSgd = 2, collZeroNumOptimizers = 3 } collZeroOptimizer_t;

typedef struct {
  collZeroOptimizer_t optimizer;
  double lr;
  double beta1, beta2, eps; /* Adam, AdamW */
  double weightDecay;
  double momentum, dampening; /* SGD; momentum 0 needs no state */
  int nesterov;               /* SGD */
  long long step;             /* this update's number, from 1 (Adam's bias correction; SGD's first step) */
  double gradScale;           /* gradients are multiplied by this first: 1/loss scale times clipping; 1 */
} collZeroStepConfig_t;

/* Updates count elements. master: the float32 parameters (the shard); grad: count elements of
 * gradType (collFloat32, collFloat16 or collBfloat16), read only; state0/state1: float32 state
 * (Adam: exp_avg and exp_avg_sq; SGD: momentum buffer in state0, state1 unused and may be NULL).
 * paramOut: NULL, or count elements of paramType (collFloat16 or collBfloat16) that receive the
 * updated master rounded to nearest even (the low-precision model copy of mixed precision). The
 * arrays must not overlap one another (collInvalidArgument naming the two that do). */
collResult_t collZeroOptimizerStep(const collZeroStepConfig_t* config, float* master, const void* grad,
                                   collDataType_t gradType, float* state0, float* state1, void* paramOut,
                                   collDataType_t paramType, size_t count);

/* collZeroOptimizerStep on device memory, ordered on `stream` (a cudaStream_t): master, grad,
 * state0, state1 and paramOut are device (or managed) memory of the stream's GPU, and the call
 * returns once the step is enqueued on the stream. The kernel computes what the host step does,
 * element by element and with the same roundings, so a shard stepped on a GPU matches one stepped on
 * the host bit for bit (NaN payloads aside). A NULL stream is collZeroOptimizerStep on host
 * buffers. A stream where the build has no CUDA support or the process no GPU is collInvalidUsage;
 * a buffer that is not memory of the stream's GPU, collInvalidArgument naming it. */
collResult_t collZeroOptimizerStepOnStream(const collZeroStepConfig_t* config, float* master, const void* grad,
                                           collDataType_t gradType, float* state0, float* state1, void* paramOut,
                                           collDataType_t paramType, size_t count, collStream_t stream);

/* *sumOfSquares = sum of data[i]^2 over count elements (accumulated in double; for the global
 * gradient norm, all-reduce it). *nonFinite = 1 when an element is Inf or NaN (fp16 overflow). */
collResult_t collZeroSquaredNorm(const void* data, collDataType_t datatype, size_t count, double* sumOfSquares,
                                 int* nonFinite);

/* collZeroSquaredNorm on device memory, ordered on `stream`: data, sumOfSquares and nonFinite are
 * device (or managed) memory of the stream's GPU, written when the stream reaches the call (so
 * that an all-reduce of *sumOfSquares may follow on the stream without a synchronization). The sum
 * is taken in double in an order fixed by `count` alone: the same input gives the same bits on every
 * run and GPU, within rounding of the host's sum. A NULL stream is collZeroSquaredNorm. */
collResult_t collZeroSquaredNormOnStream(const void* data, collDataType_t datatype, size_t count, double* sumOfSquares,
                                         int* nonFinite, collStream_t stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* COLLECTIVE_ZERO_H_ */
