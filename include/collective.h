/*
 * libcollective: collective communication over host and device memory.
 *
 * The C99 public interface. It mirrors NCCL's API with the prefix `coll` so that NCCL users can
 * switch by renaming, and extends it to host memory (stream == NULL). The contract is documented
 * in docs/api.md; names and signatures here never change, new ones are only added.
 */
#ifndef COLLECTIVE_H_
#define COLLECTIVE_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COLL_MAJOR 0
#define COLL_MINOR 1
#define COLL_PATCH 0
#define COLL_VERSION_CODE (COLL_MAJOR * 10000 + COLL_MINOR * 100 + COLL_PATCH)

typedef struct collComm* collComm_t;

#define COLL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[COLL_UNIQUE_ID_BYTES];
} collUniqueId;

#define COLL_SPLIT_NOCOLOR (-1)

typedef enum {
  collSuccess = 0,
  collUnhandledCudaError = 1,
  collSystemError = 2,
  collInternalError = 3,
  collInvalidArgument = 4,
  collInvalidUsage = 5,
  collRemoteError = 6,
  collInProgress = 7,
  collTimeout = 8,
  collNumResults = 9
} collResult_t;

typedef enum {
  collInt8 = 0,
  collChar = 0,
  collUint8 = 1,
  collInt32 = 2,
  collInt = 2,
  collUint32 = 3,
  collInt64 = 4,
  collUint64 = 5,
  collFloat16 = 6,
  collHalf = 6,
  collFloat32 = 7,
  collFloat = 7,
  collFloat64 = 8,
  collDouble = 8,
  collBfloat16 = 9,
  collNumTypes = 10
} collDataType_t;

typedef enum { collSum = 0, collProd = 1, collMax = 2, collMin = 3, collAvg = 4, collNumOps = 5 } collRedOp_t;

/* A cudaStream_t for device buffers; NULL for host buffers (the call completes before it returns). */
typedef void* collStream_t;

#define COLL_CONFIG_MAGIC 0x636f6c6cu

typedef struct {
  size_t size;          /* sizeof(collConfig_t), set by COLL_CONFIG_INITIALIZER */
  unsigned magic;       /* set by the initializer; checked by the library */
  unsigned version;     /* COLL_VERSION_CODE of the header the caller compiled with */
  int blocking;         /* 1 (default): init and collectives block until done (host) */
  int timeoutMs;        /* every wait in init and collectives; default 300000; <=0: default */
  const char* commName; /* for logs; may be NULL */
} collConfig_t;

#define COLL_CONFIG_INITIALIZER \
  { sizeof(collConfig_t), COLL_CONFIG_MAGIC, COLL_VERSION_CODE, 1, -1, NULL }

/* Lifecycle and queries */
collResult_t collGetVersion(int* version);
collResult_t collGetUniqueId(collUniqueId* uniqueId);
/* The id made by collGetUniqueId in this process will make no more communicators: its rendezvous
 * server ends as soon as no rank is connected to it (at once if none is), and with it its thread
 * and descriptors. Call it once every rank's collCommInitRank with the id has returned, or for an
 * id never handed out. Communicators made from the id end its server by themselves when they are
 * all gone; an id that is neither used nor released keeps its server until the process exits.
 * A no-op in any other process, and for an id already released. */
collResult_t collUniqueIdRelease(const collUniqueId* uniqueId);
collResult_t collCommInitRank(collComm_t* comm, int nranks, collUniqueId commId, int rank);
collResult_t collCommInitRankConfig(collComm_t* comm, int nranks, collUniqueId commId, int rank,
                                    collConfig_t* config);
collResult_t collCommInitFromEnv(collComm_t* comm, collConfig_t* config);
collResult_t collCommSplit(collComm_t comm, int color, int key, collComm_t* newcomm, collConfig_t* config);
collResult_t collCommFinalize(collComm_t comm);
collResult_t collCommDestroy(collComm_t comm);
collResult_t collCommAbort(collComm_t comm);
collResult_t collCommGetAsyncError(collComm_t comm, collResult_t* asyncError);
collResult_t collCommCount(const collComm_t comm, int* count);
collResult_t collCommUserRank(const collComm_t comm, int* rank);
collResult_t collCommCuDevice(const collComm_t comm, int* device);
const char* collGetErrorString(collResult_t result);
/* This thread's last failure message, about comm when comm is not NULL (docs/api.md). */
const char* collGetLastError(collComm_t comm);

/* Surviving a lost rank (docs/api.md, docs/errors.md). */
#define COLL_SHRINK_DEFAULT 0 /* collCommShrink on a communicator whose calls already ended */
#define COLL_SHRINK_ABORT 1   /* collCommRevoke the communicator first */
/* Every pending and later call on comm, on every rank, fails with collRemoteError ("revoked"); comm
   stays valid for collCommShrink and collCommDestroy. Any thread. */
collResult_t collCommRevoke(collComm_t comm);
/* Called by every surviving rank: they agree on the ranks to leave out (the union of every caller's
   list and the ranks found gone) and build *newcomm of the others, in their order. */
collResult_t collCommShrink(collComm_t comm, const int* excludeRanksList, int excludeRanksCount,
                            collComm_t* newcomm, collConfig_t* config, int shrinkFlags);
/* For a communicator made by collCommShrink: the parent's ranks it left out, ascending; *count gets
   how many there are, and up to capacity of them are written to ranks. */
collResult_t collCommExcludedRanks(const collComm_t comm, int* ranks, int capacity, int* count);
/* Existing ranks: comm, rank -1 (they keep their ranks), uniqueId on comm's rank 0 (NULL or the same
   id elsewhere). New ranks: comm NULL, the same uniqueId, rank in [comm's size, nranks). */
collResult_t collCommGrow(collComm_t comm, int nranks, const collUniqueId* uniqueId, int rank,
                          collComm_t* newcomm, collConfig_t* config);
/* Writes this rank's flight recorder (its last calls) to path; NULL: a file in COLL_TRACE_DIR. */
collResult_t collCommDumpTrace(collComm_t comm, const char* path);

/* Collectives. count is in elements of datatype. */
collResult_t collAllReduce(const void* sendbuff, void* recvbuff, size_t count, collDataType_t datatype,
                           collRedOp_t op, collComm_t comm, collStream_t stream);
collResult_t collBroadcast(const void* sendbuff, void* recvbuff, size_t count, collDataType_t datatype, int root,
                           collComm_t comm, collStream_t stream);
collResult_t collReduce(const void* sendbuff, void* recvbuff, size_t count, collDataType_t datatype,
                        collRedOp_t op, int root, collComm_t comm, collStream_t stream);
collResult_t collAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, collDataType_t datatype,
                           collComm_t comm, collStream_t stream);
collResult_t collReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, collDataType_t datatype,
                               collRedOp_t op, collComm_t comm, collStream_t stream);
collResult_t collGather(const void* sendbuff, void* recvbuff, size_t sendcount, collDataType_t datatype, int root,
                        collComm_t comm, collStream_t stream);
collResult_t collScatter(const void* sendbuff, void* recvbuff, size_t recvcount, collDataType_t datatype, int root,
                         collComm_t comm, collStream_t stream);
collResult_t collAllToAll(const void* sendbuff, void* recvbuff, size_t count, collDataType_t datatype,
                          collComm_t comm, collStream_t stream);
collResult_t collBarrier(collComm_t comm, collStream_t stream);
collResult_t collSend(const void* sendbuff, size_t count, collDataType_t datatype, int peer, collComm_t comm,
                      collStream_t stream);
collResult_t collRecv(void* recvbuff, size_t count, collDataType_t datatype, int peer, collComm_t comm,
                      collStream_t stream);
collResult_t collGroupStart(void);
collResult_t collGroupEnd(void);

/* Receive from any source (docs/api.md): receives the next message that any rank sends this one
 * with collSend, into host memory (stream NULL), outside a group, and sets *source to its sender.
 * Works where every rank of comm shares this host's memory; elsewhere collInvalidUsage. */
collResult_t collRecvAny(void* recvbuff, size_t count, collDataType_t datatype, int* source, collComm_t comm,
                         collStream_t stream);
/* *available = 1 where collRecvAny works on comm, else 0; the same on every rank. */
collResult_t collCommRecvAnyAvailable(const collComm_t comm, int* available);

/* Variable-count collectives (docs/api.md), MPI's shapes with size_t counts and displacements in
 * elements of datatype, one entry per rank. Host buffers only for now (stream NULL), outside a
 * group. Every rank passes the same recvcounts to AllGatherV and ReduceScatterV; in AllToAllV,
 * sendcounts[j] on rank i equals recvcounts[i] on rank j.
 * AllGatherV: rank j's sendcount elements land at recvbuff + displs[j]; sendcount must equal
 *   recvcounts[rank]. In place: sendbuff == recvbuff + displs[rank] (elements).
 * ReduceScatterV: sendbuff holds the blocks of every rank in rank order, recvcounts[j] elements
 *   each; rank j receives the reduction of block j. In place: recvbuff == sendbuff + (the sum of
 *   recvcounts below rank).
 * AllToAllV: sendcounts[j] elements from sendbuff + sdispls[j] go to rank j, and recvcounts[j]
 *   elements from rank j land at recvbuff + rdispls[j]. Never in place. */
collResult_t collAllGatherV(const void* sendbuff, size_t sendcount, void* recvbuff, const size_t* recvcounts,
                            const size_t* displs, collDataType_t datatype, collComm_t comm, collStream_t stream);
collResult_t collReduceScatterV(const void* sendbuff, void* recvbuff, const size_t* recvcounts, collDataType_t datatype,
                                collRedOp_t op, collComm_t comm, collStream_t stream);
collResult_t collAllToAllV(const void* sendbuff, const size_t* sendcounts, const size_t* sdispls, void* recvbuff,
                           const size_t* recvcounts, const size_t* rdispls, collDataType_t datatype, collComm_t comm,
                           collStream_t stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* COLLECTIVE_H_ */
