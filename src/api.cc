// The C API: every entry point validates its arguments, catches every C++ exception and turns it
// into a collResult_t plus this thread's last-error message.
#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include <unistd.h>

#include "bootstrap/launch_env.h"
#include "bootstrap/unique_id.h"
#include "collective.h"
#include "common/enum_bits.h"
#include "common/error.h"
#include "src/api_handles.h"
#include "src/api_internal.h"
#include "src/comm.h"
#include "src/group.h"
#include "src/last_error.h"
#include "src/validate.h"

// The handle behind collComm_t. The magic tells a live communicator from a destroyed or foreign
// pointer.
struct collComm {
  static constexpr uint64_t kLive = 0x636f6c6c636f6d6dull;
  uint64_t magic = kLive;
  std::unique_ptr<coll::Communicator> impl;
};

namespace coll {
namespace {

constexpr int kMaxRanks = 1 << 15;

template <typename Body>
collResult_t guarded(const char* function, Body&& body) {
  // The communicator this entry point names, once liveComm found it (nested entry points, as in
  // zero/, keep the outer one's).
  uint64_t& current = currentCallCommunicator();
  const uint64_t outer = current;
  struct Restore {
    uint64_t& current;
    uint64_t outer;
    ~Restore() { current = outer; }
  } restore{current, outer};
  auto record = [&](const std::string& message, uint64_t comm) { recordLastError(message, comm ? comm : current); };
  try {
    body();
    return collSuccess;
  } catch (const CollError& e) {
    std::string message = e.what();
    if (message.compare(0, strlen(function), function) != 0) message = std::string(function) + ": " + message;
    record(message, e.communicator());
    return e.code();
  } catch (const std::bad_alloc&) {
    record(std::string(function) + ": out of memory", 0);
    return collSystemError;
  } catch (const std::exception& e) {
    record(std::string(function) + ": internal error: " + e.what(), 0);
    return collInternalError;
  } catch (...) {
    record(std::string(function) + ": internal error (unknown exception)", 0);
    return collInternalError;
  }
}

collComm* liveComm(collComm_t comm, const char* function) {
  if (comm == nullptr)
    throwError(collInvalidArgument, "%s: comm is NULL: expected a communicator from collCommInit*", function);
  if (comm->magic != collComm::kLive || !comm->impl)
    throwError(collInvalidArgument, "%s: comm %p is not a live communicator (destroyed or never initialized?)",
               function, static_cast<void*>(comm));
  currentCallCommunicator() = comm->impl->id();
  return comm;
}

CommOptions optionsFrom(const collConfig_t* config, const char* function) {
  CommOptions options;
  options.timeoutMs = processParams().timeoutMs;
  if (config == nullptr) return options;
  if (config->magic != COLL_CONFIG_MAGIC)
    throwError(collInvalidArgument, "%s: config->magic is 0x%x: expected a config set up with COLL_CONFIG_INITIALIZER",
               function, config->magic);
  if (config->size < offsetof(collConfig_t, commName) + sizeof(config->commName))
    throwError(collInvalidArgument, "%s: config->size %zu is too small: expected sizeof(collConfig_t) = %zu", function,
               config->size, sizeof(collConfig_t));
  if (config->version / 10000 != COLL_MAJOR)
    throwError(collInvalidArgument, "%s: config->version %u was compiled for major version %u; this library is %d",
               function, config->version, config->version / 10000, COLL_MAJOR);
  if (config->timeoutMs > 0) options.timeoutMs = config->timeoutMs;
  if (config->commName != nullptr) options.name = config->commName;
  return options;
}

// Each communicator built on one store gets its own key space: the k-th one a rank creates on
// that store uses prefix "comm<k>", so a reused unique id never sees a previous job's keys.
std::shared_ptr<bootstrap::Store> communicatorStore(const std::shared_ptr<bootstrap::Store>& base, int rank) {
  int64_t generation = base->add("generation/" + std::to_string(rank), 1);
  return std::make_shared<bootstrap::PrefixStore>("comm" + std::to_string(generation), base);
}

void initWithStore(collComm_t* out, std::shared_ptr<bootstrap::Store> store, int nranks, int rank,
                   const CommOptions& options) {
  auto handle = std::make_unique<collComm>();
  handle->impl = std::make_unique<Communicator>(communicatorStore(store, rank), nranks, rank, options);
  *out = handle.release();
}

void checkInitArgs(collComm_t* comm, int nranks, int rank, const char* function) {
  if (comm == nullptr)
    throwError(collInvalidArgument, "%s: comm is NULL: expected a pointer to a collComm_t", function);
  // Binomial trees reduce a node's children in one pass of at most 16 sources: 2^15 ranks.
  if (nranks < 1 || nranks > kMaxRanks)
    throwError(collInvalidArgument, "%s: nranks %d: expected 1 to %d", function, nranks, kMaxRanks);
  if (rank < 0 || rank >= nranks)
    throwError(collInvalidArgument, "%s: rank %d is out of range: expected 0 <= rank < nranks (%d)", function, rank,
               nranks);
}

collResult_t runCall(const char* function, CollCall call, collComm_t comm, collStream_t stream) {
  return guarded(function, [&] {
    collComm* handle = liveComm(comm, function);
    Communicator& c = *handle->impl;
    validateCall(function, call, c.rank(), c.nranks());
    // Inside a group the call is only queued: it runs in collGroupEnd (group.cc), which counts the
    // group in flight while it runs it. A call that runs now is counted in flight while it runs, so
    // that collCommAbort does not free the communicator meanwhile.
    auto queueOrRun = [&] {
      if (groupEnqueueIfOpen(&c, call, stream)) return;
      Communicator::CallInFlight inFlight(c);
      c.run(call, stream);
    };
    if (stream == nullptr) {
      refuseDeviceBuffers(function, call);
      queueOrRun();  // a queued host call takes no count: two locked operations fewer a call
      return;
    }
    // The engine for device memory: refused here, before the call is queued or anything touched.
    // A rank's first call with a stream sets up device memory (comm_device.cc), which waits for
    // the other ranks, so it is in flight from here; inside a group too, since the setup does not
    // depend on which call comes first.
    Communicator::CallInFlight settingUp(c);
    c.engineFor(stream);
    queueOrRun();
  });
}

}  // namespace

collResult_t commInitWithStore(collComm_t* comm, std::shared_ptr<bootstrap::Store> store, int nranks, int rank,
                               const collConfig_t* config) {
  return guarded("collCommInitRank", [&] {
    checkInitArgs(comm, nranks, rank, "collCommInitRank");
    if (!store) throwError(collInvalidArgument, "collCommInitRank: store is NULL");
    initWithStore(comm, std::move(store), nranks, rank, optionsFrom(config, "collCommInitRank"));
  });
}

collResult_t guardedCall(const char* function, const std::function<void()>& body) { return guarded(function, body); }

Communicator& liveCommunicator(collComm_t comm, const char* function) { return *liveComm(comm, function)->impl; }

CommOptions optionsFromConfig(const collConfig_t* config, const char* function) {
  return optionsFrom(config, function);
}

collComm_t handleFor(std::unique_ptr<Communicator> impl) {
  auto handle = std::make_unique<collComm>();
  handle->impl = std::move(impl);
  return handle.release();
}

void initFromUniqueId(collComm_t* comm, int nranks, const collUniqueId& id, int rank, const CommOptions& options) {
  auto deadline = Clock::now() + std::chrono::milliseconds(options.timeoutMs);
  auto client = bootstrap::connectStore(id, deadline);
  // The store lives as long as the communicator and the ones split from it. When the last of
  // them is gone, the connection closes and, if this process made the id, its server may end
  // (once the other ranks are gone too). Not after a failed init: the other ranks may still be
  // on their way, and should hear of the failure, not find no server.
  auto formed = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<bootstrap::Store> store(client.get(), [client, formed, id](bootstrap::Store*) mutable {
    client.reset();
    if (formed->load()) bootstrap::releaseUniqueIdServer(id);
  });
  initWithStore(comm, store, nranks, rank, options);
  formed->store(true);
}

Communicator* communicatorOf(collComm_t comm) {
  return comm != nullptr && comm->magic == collComm::kLive ? comm->impl.get() : nullptr;
}

}  // namespace coll

using coll::CollCall;
using coll::CollType;

namespace {

// The datatype and op by reference, copied as bytes: a caller's out-of-range value (which
// validation reports) must not be loaded as the enum on the way (common/enum_bits.h).
CollCall callOf(CollType type, const void* sendbuff, void* recvbuff, size_t count, const collDataType_t& datatype,
                const collRedOp_t& op, int root) {
  CollCall c;
  c.type = type;
  c.sendbuff = sendbuff;
  c.recvbuff = recvbuff;
  c.count = count;
  std::memcpy(&c.datatype, &datatype, sizeof c.datatype);
  std::memcpy(&c.op, &op, sizeof c.op);
  c.root = root;
  return c;
}

// A variable-count call: its arrays stay on this frame while it runs, or is planned and
// enqueued with a stream (runCall); a group queues copies of them (group.cc).
collResult_t variableCall(const char* function, CollType type, const void* sendbuff, void* recvbuff,
                          const collDataType_t& datatype, const collRedOp_t& op, coll::VariableCounts counts,
                          collComm_t comm, collStream_t stream) {
  CollCall call = callOf(type, sendbuff, recvbuff, 0, datatype, op, 0);
  call.counts = &counts;
  return coll::runCall(function, call, comm, stream);
}

CollCall pointToPointOf(CollType type, const void* sendbuff, void* recvbuff, size_t count,
                        const collDataType_t& datatype, int peer) {
  CollCall c = callOf(type, sendbuff, recvbuff, count, datatype, collSum, 0);
  c.peer = peer;
  return c;
}

}  // namespace

COLL_API collResult_t collGetVersion(int* version) {
  return coll::guarded("collGetVersion", [&] {
    if (version == nullptr) coll::throwError(collInvalidArgument, "collGetVersion: version is NULL");
    *version = COLL_VERSION_CODE;
  });
}

COLL_API collResult_t collGetUniqueId(collUniqueId* uniqueId) {
  return coll::guarded("collGetUniqueId", [&] {
    if (uniqueId == nullptr) coll::throwError(collInvalidArgument, "collGetUniqueId: uniqueId is NULL");
    *uniqueId = coll::bootstrap::createUniqueId();
  });
}

COLL_API collResult_t collUniqueIdRelease(const collUniqueId* uniqueId) {
  return coll::guarded("collUniqueIdRelease", [&] {
    if (uniqueId == nullptr) coll::throwError(collInvalidArgument, "collUniqueIdRelease: uniqueId is NULL");
    coll::bootstrap::releaseUniqueId(*uniqueId);
  });
}

COLL_API collResult_t collCommInitRankConfig(collComm_t* comm, int nranks, collUniqueId commId, int rank,
                                             collConfig_t* config) {
  return coll::guarded("collCommInitRank", [&] {
    coll::checkInitArgs(comm, nranks, rank, "collCommInitRank");
    coll::initFromUniqueId(comm, nranks, commId, rank, coll::optionsFrom(config, "collCommInitRank"));
  });
}

COLL_API collResult_t collCommInitRank(collComm_t* comm, int nranks, collUniqueId commId, int rank) {
  return collCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

COLL_API collResult_t collCommInitFromEnv(collComm_t* comm, collConfig_t* config) {
  return coll::guarded("collCommInitFromEnv", [&] {
    if (comm == nullptr) coll::throwError(collInvalidArgument, "collCommInitFromEnv: comm is NULL");
    coll::CommOptions options = coll::optionsFrom(config, "collCommInitFromEnv");
    coll::bootstrap::LaunchEnv env = coll::bootstrap::detectLaunchEnv();
    auto deadline = coll::Clock::now() + std::chrono::milliseconds(options.timeoutMs);
    auto store = coll::bootstrap::connectLaunchStore(env, deadline);
    coll::initWithStore(comm, store, env.size, env.rank, options);
  });
}

COLL_API collResult_t collCommSplit(collComm_t comm, int color, int key, collComm_t* newcomm, collConfig_t* config) {
  return coll::guarded("collCommSplit", [&] {
    collComm* handle = coll::liveComm(comm, "collCommSplit");
    if (newcomm == nullptr) coll::throwError(collInvalidArgument, "collCommSplit: newcomm is NULL");
    if (color < 0 && color != COLL_SPLIT_NOCOLOR)
      coll::throwError(collInvalidArgument, "collCommSplit: color %d: expected >= 0 or COLL_SPLIT_NOCOLOR (-1)", color);
    // Without a config the child inherits the parent's settings.
    coll::CommOptions options = config ? coll::optionsFrom(config, "collCommSplit") : handle->impl->options();
    auto child = handle->impl->split(color, key, options);
    if (!child) {
      *newcomm = nullptr;
      return;
    }
    auto out = std::make_unique<collComm>();
    out->impl = std::move(child);
    *newcomm = out.release();
  });
}

COLL_API collResult_t collCommFinalize(collComm_t comm) {
  // Host calls complete before they return; device calls are waited for.
  return coll::guarded("collCommFinalize", [&] { coll::liveComm(comm, "collCommFinalize")->impl->finalize(); });
}

COLL_API collResult_t collCommDestroy(collComm_t comm) {
  return coll::guarded("collCommDestroy", [&] {
    collComm* handle = coll::liveComm(comm, "collCommDestroy");
    handle->magic = 0;
    handle->impl.reset();
    delete handle;
  });
}

COLL_API collResult_t collCommAbort(collComm_t comm) {
  return coll::guarded("collCommAbort", [&] {
    collComm* handle = coll::liveComm(comm, "collCommAbort");
    handle->impl->abort();
    // The interrupted call notices within a few milliseconds; free only after it let go.
    while (handle->impl->callsInFlight() > 0) usleep(1000);
    handle->magic = 0;
    handle->impl.reset();
    delete handle;
  });
}

COLL_API collResult_t collCommGetAsyncError(collComm_t comm, collResult_t* asyncError) {
  return coll::guarded("collCommGetAsyncError", [&] {
    collComm* handle = coll::liveComm(comm, "collCommGetAsyncError");
    if (asyncError == nullptr) coll::throwError(collInvalidArgument, "collCommGetAsyncError: asyncError is NULL");
    *asyncError = handle->impl->asyncError();
  });
}

COLL_API collResult_t collCommCount(const collComm_t comm, int* count) {
  return coll::guarded("collCommCount", [&] {
    collComm* handle = coll::liveComm(comm, "collCommCount");
    if (count == nullptr) coll::throwError(collInvalidArgument, "collCommCount: count is NULL");
    *count = handle->impl->nranks();
  });
}

COLL_API collResult_t collCommUserRank(const collComm_t comm, int* rank) {
  return coll::guarded("collCommUserRank", [&] {
    collComm* handle = coll::liveComm(comm, "collCommUserRank");
    if (rank == nullptr) coll::throwError(collInvalidArgument, "collCommUserRank: rank is NULL");
    *rank = handle->impl->rank();
  });
}

COLL_API collResult_t collCommCuDevice(const collComm_t comm, int* device) {
  return coll::guarded("collCommCuDevice", [&] {
    collComm* handle = coll::liveComm(comm, "collCommCuDevice");
    if (device == nullptr) coll::throwError(collInvalidArgument, "collCommCuDevice: device is NULL");
    *device = handle->impl->cudaDevice();
  });
}

COLL_API const char* collGetErrorString(collResult_t result) {
  // As an int: any value a C caller passes gets an answer, and loading an out-of-range one as the
  // enum would be undefined (common/enum_bits.h).
  switch (coll::enumBits(result)) {
    case collSuccess:
      return "no error";
    case collUnhandledCudaError:
      return "unhandled cuda error (run with COLL_DEBUG=INFO for details)";
    case collSystemError:
      return "unhandled system error (run with COLL_DEBUG=INFO for details)";
    case collInternalError:
      return "internal error - please report this issue";
    case collInvalidArgument:
      return "invalid argument (see collGetLastError for details)";
    case collInvalidUsage:
      return "invalid usage (see collGetLastError for details)";
    case collRemoteError:
      return "remote process exited or there was a network error";
    case collInProgress:
      return "operation in progress";
    case collTimeout:
      return "operation timed out (COLL_TIMEOUT_MS)";
    default:
      return "unknown result code";
  }
}

COLL_API const char* collGetLastError(collComm_t comm) {
  // A destroyed or foreign handle is not read beyond its magic; it gets the thread's latest.
  coll::Communicator* impl = coll::communicatorOf(comm);
  return impl == nullptr ? coll::lastError().c_str() : coll::lastErrorAbout(impl->id()).c_str();
}

COLL_API collResult_t collAllReduce(const void* sendbuff, void* recvbuff, size_t count, collDataType_t datatype,
                                    collRedOp_t op, collComm_t comm, collStream_t stream) {
  return coll::runCall("collAllReduce", callOf(CollType::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0), comm,
                       stream);
}

COLL_API collResult_t collBroadcast(const void* sendbuff, void* recvbuff, size_t count, collDataType_t datatype,
                                    int root, collComm_t comm, collStream_t stream) {
  return coll::runCall("collBroadcast",
                       callOf(CollType::kBroadcast, sendbuff, recvbuff, count, datatype, collSum, root), comm, stream);
}

COLL_API collResult_t collReduce(const void* sendbuff, void* recvbuff, size_t count, collDataType_t datatype,
                                 collRedOp_t op, int root, collComm_t comm, collStream_t stream) {
  return coll::runCall("collReduce", callOf(CollType::kReduce, sendbuff, recvbuff, count, datatype, op, root), comm,
                       stream);
}

COLL_API collResult_t collAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, collDataType_t datatype,
                                    collComm_t comm, collStream_t stream) {
  return coll::runCall("collAllGather",
                       callOf(CollType::kAllGather, sendbuff, recvbuff, sendcount, datatype, collSum, 0), comm, stream);
}

COLL_API collResult_t collReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, collDataType_t datatype,
                                        collRedOp_t op, collComm_t comm, collStream_t stream) {
  return coll::runCall("collReduceScatter",
                       callOf(CollType::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0), comm, stream);
}

COLL_API collResult_t collGather(const void* sendbuff, void* recvbuff, size_t sendcount, collDataType_t datatype,
                                 int root, collComm_t comm, collStream_t stream) {
  return coll::runCall("collGather", callOf(CollType::kGather, sendbuff, recvbuff, sendcount, datatype, collSum, root),
                       comm, stream);
}

COLL_API collResult_t collScatter(const void* sendbuff, void* recvbuff, size_t recvcount, collDataType_t datatype,
                                  int root, collComm_t comm, collStream_t stream) {
  return coll::runCall(
      "collScatter", callOf(CollType::kScatter, sendbuff, recvbuff, recvcount, datatype, collSum, root), comm, stream);
}

COLL_API collResult_t collAllToAll(const void* sendbuff, void* recvbuff, size_t count, collDataType_t datatype,
                                   collComm_t comm, collStream_t stream) {
  return coll::runCall("collAllToAll", callOf(CollType::kAllToAll, sendbuff, recvbuff, count, datatype, collSum, 0),
                       comm, stream);
}

COLL_API collResult_t collAllGatherV(const void* sendbuff, size_t sendcount, void* recvbuff, const size_t* recvcounts,
                                     const size_t* displs, collDataType_t datatype, collComm_t comm,
                                     collStream_t stream) {
  return variableCall("collAllGatherV", CollType::kAllGatherV, sendbuff, recvbuff, datatype, collSum,
                      {sendcount, nullptr, nullptr, recvcounts, displs}, comm, stream);
}

COLL_API collResult_t collReduceScatterV(const void* sendbuff, void* recvbuff, const size_t* recvcounts,
                                         collDataType_t datatype, collRedOp_t op, collComm_t comm,
                                         collStream_t stream) {
  return variableCall("collReduceScatterV", CollType::kReduceScatterV, sendbuff, recvbuff, datatype, op,
                      {0, nullptr, nullptr, recvcounts, nullptr}, comm, stream);
}

COLL_API collResult_t collAllToAllV(const void* sendbuff, const size_t* sendcounts, const size_t* sdispls,
                                    void* recvbuff, const size_t* recvcounts, const size_t* rdispls,
                                    collDataType_t datatype, collComm_t comm, collStream_t stream) {
  return variableCall("collAllToAllV", CollType::kAllToAllV, sendbuff, recvbuff, datatype, collSum,
                      {0, sendcounts, sdispls, recvcounts, rdispls}, comm, stream);
}

COLL_API collResult_t collBarrier(collComm_t comm, collStream_t stream) {
  return coll::runCall("collBarrier", callOf(CollType::kBarrier, nullptr, nullptr, 0, collUint8, collSum, 0), comm,
                       stream);
}

COLL_API collResult_t collSend(const void* sendbuff, size_t count, collDataType_t datatype, int peer, collComm_t comm,
                               collStream_t stream) {
  return coll::runCall("collSend", pointToPointOf(CollType::kSend, sendbuff, nullptr, count, datatype, peer), comm,
                       stream);
}

COLL_API collResult_t collRecv(void* recvbuff, size_t count, collDataType_t datatype, int peer, collComm_t comm,
                               collStream_t stream) {
  return coll::runCall("collRecv", pointToPointOf(CollType::kRecv, nullptr, recvbuff, count, datatype, peer), comm,
                       stream);
}

COLL_API collResult_t collRecvAny(void* recvbuff, size_t count, collDataType_t datatype, int* source, collComm_t comm,
                                  collStream_t stream) {
  return coll::guarded("collRecvAny", [&] {
    collComm* handle = coll::liveComm(comm, "collRecvAny");
    coll::Communicator& c = *handle->impl;
    if (source == nullptr) coll::throwError(collInvalidArgument, "collRecvAny: source is NULL: expected an int*");
    // Validated as a receive from this rank itself, a peer that is always valid: the sender is
    // found below.
    coll::CollCall call = pointToPointOf(CollType::kRecv, nullptr, recvbuff, count, datatype, c.rank());
    coll::validateCall("collRecvAny", call, c.rank(), c.nranks());
    if (stream != nullptr)
      coll::throwError(collInvalidUsage,
                       "collRecvAny: stream %p given: receive from any source takes host buffers (stream NULL); name "
                       "the source with collRecv for device memory",
                       stream);
    coll::refuseDeviceBuffers("collRecvAny", call);
    if (coll::groupIsOpen())
      coll::throwError(collInvalidUsage,
                       "collRecvAny inside collGroupStart/collGroupEnd: a receive from any source must find its "
                       "sender before it runs, so it cannot wait for the group's end; call it outside the group");
    coll::Communicator::CallInFlight inFlight(c);
    *source = c.recvFromAnySource(call);
  });
}

COLL_API collResult_t collCommRecvAnyAvailable(const collComm_t comm, int* available) {
  return coll::guarded("collCommRecvAnyAvailable", [&] {
    collComm* handle = coll::liveComm(comm, "collCommRecvAnyAvailable");
    if (available == nullptr)
      coll::throwError(collInvalidArgument, "collCommRecvAnyAvailable: available is NULL: expected an int*");
    *available = handle->impl->canRecvFromAnySource() ? 1 : 0;
  });
}

COLL_API collResult_t collGroupStart(void) {
  return coll::guarded("collGroupStart", [] { coll::groupStart(); });
}

COLL_API collResult_t collGroupEnd(void) {
  return coll::guarded("collGroupEnd", [] { coll::groupEnd(); });
}
