// gpu_api's sections about sequences of device calls through the public API, ranks being threads
// sharing GPU 0 (gpu_api_checks.h). Every output is poisoned (0xff bytes: NaN) before the calls
// and compared with values computed here from the inputs; every value is a small integer (or a
// half), so float sums are exact and any corruption shows.
//   - back to back: eleven calls of every kind on one stream with no host synchronization, small
//     (LL) and large (Simple, several 1 MiB slices), one depending on another's output;
//   - graph replay: two all-reduces captured in a CUDA graph after the lazy device setup ran
//     eagerly, replayed three times between eager calls on another stream;
//   - two communicators over the same ranks, calls interleaved on two streams;
//   - collCommAbort from another thread ends a call whose peer never joins.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "gpu_api_checks.h"
#include "src/api_internal.h"

namespace gpuapi {
namespace {

using Clock = std::chrono::steady_clock;

long msSince(Clock::time_point t) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count());
}

// Device buffers of one rank, freed when it goes out of scope: after the communicator was
// destroyed (its barrier), since cudaFree synchronizes the device and a peer's kernel may still
// wait for this rank before that.
class Arena {
 public:
  ~Arena() {
    for (void* p : buffers_) cudaFree(p);
  }
  // `values` uploaded (the stream is synchronized before init), or 0xff bytes when empty.
  float* make(size_t count, const std::vector<float>& values, cudaStream_t stream) {
    float* p = nullptr;
    if (cudaMalloc(&p, count * sizeof(float)) != cudaSuccess) return nullptr;
    buffers_.push_back(p);
    staged_.push_back(values);
    if (values.empty())
      cudaMemsetAsync(p, 0xff, count * sizeof(float), stream);
    else
      cudaMemcpyAsync(p, staged_.back().data(), count * sizeof(float), cudaMemcpyHostToDevice, stream);
    return p;
  }

 private:
  std::vector<void*> buffers_;
  std::vector<std::vector<float>> staged_;  // kept until the uploads are done
};

template <typename F>
std::vector<float> fill(size_t count, F f) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>(f(i));
  return v;
}

collComm_t initComm(const StorePtr& store, int n, int rank, Failures* failures) {
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = timeoutMs();
  collComm_t comm = nullptr;
  if (coll::commInitWithStore(&comm, store, n, rank, &config) != collSuccess) {
    failures->push_back("init: " + lastError(nullptr));
    return nullptr;
  }
  return comm;
}

// The end of a healthy rank: no async error, finalize, destroy (which meets the other ranks).
// A rank that leaves a section early (a failed capture or CUDA call) aborts its communicator, so
// that the peers stop waiting for it instead of running into the section's watchdog.
struct AbortUnlessFinished {
  collComm_t comm;
  bool finished = false;
  ~AbortUnlessFinished() {
    if (!finished) collCommAbort(comm);
  }
};

void finish(collComm_t comm, Failures* failures) {
  collResult_t async = collInternalError;
  if (collCommGetAsyncError(comm, &async) != collSuccess || async != collSuccess)
    failures->push_back(std::string("async error: ") + collGetErrorString(async) + " " + lastError(comm));
  if (collCommFinalize(comm) != collSuccess) failures->push_back("finalize: " + lastError(comm));
  if (collCommDestroy(comm) != collSuccess) failures->push_back("destroy: " + lastError(nullptr));
}

// ---- back to back ----

Failures backToBackRank(int rank, int n, const StorePtr& store) {
  const size_t S = 1000;     // 4 KB: LL
  const size_t L = 1200000;  // 4.8 MB: Simple, two 4 MiB slices
  const size_t R = 300000;   // reduce-scatter: n * R in, R out
  const size_t C = 262144;   // all-to-all: 1 MiB to and from each peer
  const int bcastRoot = 1 % n, smallRoot = n - 1, reduceRoot = 0;
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  auto f = [](int r, size_t i) { return r + 1 + static_cast<int>(i % 5); };
  auto g = [](int r, size_t i) { return r * 10 + static_cast<int>(i % 7); };
  auto h = [](int r, size_t i) { return static_cast<int>((r * 3 + i) % 11); };
  auto a2a = [](int from, int to, size_t i) { return from * 100 + to + static_cast<int>(i % 13) * 10000; };
  auto ring = [](int r, size_t i) { return r * 1000 + static_cast<int>(i % 1000); };
  auto sumF = [&](size_t i) { return n * (n + 1) / 2 + n * static_cast<int>(i % 5); };

  CHECK_CUDA(cudaSetDevice(0));
  cudaStream_t s = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Failures failures;
  {
    Arena arena;
    float* arIn = arena.make(S, fill(S, [&](size_t i) { return f(rank, i); }), s);
    float* arOut = arena.make(S, {}, s);
    float* arInPlace = arena.make(L, fill(L, [&](size_t i) { return f(rank, i); }), s);
    float* arChain = arena.make(L, {}, s);
    float* bcIn = arena.make(L, fill(L, [&](size_t i) { return g(rank, i); }), s);
    float* bcOut = arena.make(L, {}, s);
    float* agIn = arena.make(S, fill(S, [&](size_t i) { return g(rank, i); }), s);
    float* agOut = arena.make(n * S, {}, s);
    float* rsIn = arena.make(n * R, fill(n * R, [&](size_t i) { return f(rank, i); }), s);
    float* rsOut = arena.make(R, {}, s);
    float* rdIn = arena.make(S, fill(S, [&](size_t i) { return h(rank, i); }), s);
    float* rdOut = arena.make(S, {}, s);
    float* a2aIn =
        arena.make(n * C, fill(n * C, [&](size_t i) { return a2a(rank, static_cast<int>(i / C), i % C); }), s);
    float* a2aOut = arena.make(n * C, {}, s);
    float* ringOut = arena.make(L, fill(L, [&](size_t i) { return ring(rank, i); }), s);
    float* ringIn = arena.make(L, {}, s);
    float* avg = arena.make(S, fill(S, [&](size_t i) { return f(rank, i); }), s);
    float* bcInPlace = arena.make(S, fill(S, [&](size_t i) { return g(rank, i); }), s);
    if (bcInPlace == nullptr) return {"cudaMalloc failed"};
    CHECK_CUDA(cudaStreamSynchronize(s));

    collComm_t comm = initComm(store, n, rank, &failures);
    if (comm == nullptr) return failures;
    // Eleven calls, no host synchronization between them; the first is the lazy device setup.
    CHECK_COLL(collAllReduce(arIn, arOut, S, collFloat, collSum, comm, s), comm);
    CHECK_COLL(collAllReduce(arInPlace, arInPlace, L, collFloat, collSum, comm, s), comm);
    // Reads what the call before wrote: right only if the stream kept them in order.
    CHECK_COLL(collAllReduce(arInPlace, arChain, L, collFloat, collSum, comm, s), comm);
    CHECK_COLL(collBroadcast(bcIn, bcOut, L, collFloat, bcastRoot, comm, s), comm);
    CHECK_COLL(collAllGather(agIn, agOut, S, collFloat, comm, s), comm);
    CHECK_COLL(collReduceScatter(rsIn, rsOut, R, collFloat, collSum, comm, s), comm);
    CHECK_COLL(collReduce(rdIn, rdOut, S, collFloat, collMax, reduceRoot, comm, s), comm);
    CHECK_COLL(collAllToAll(a2aIn, a2aOut, C, collFloat, comm, s), comm);
    CHECK_COLL(collGroupStart(), comm);
    CHECK_COLL(collSend(ringOut, L, collFloat, next, comm, s), comm);
    CHECK_COLL(collRecv(ringIn, L, collFloat, prev, comm, s), comm);
    CHECK_COLL(collGroupEnd(), comm);
    CHECK_COLL(collAllReduce(avg, avg, S, collFloat, collAvg, comm, s), comm);
    CHECK_COLL(collBroadcast(bcInPlace, bcInPlace, S, collFloat, smallRoot, comm, s), comm);
    CHECK_CUDA(cudaStreamSynchronize(s));

    expectFloats(&failures, "all-reduce small out of place", arOut, fill(S, sumF), s);
    expectFloats(&failures, "all-reduce large in place", arInPlace, fill(L, sumF), s);
    expectFloats(&failures, "all-reduce of the previous output", arChain,
                 fill(L, [&](size_t i) { return n * sumF(i); }), s);
    expectFloats(&failures, "broadcast large", bcOut, fill(L, [&](size_t i) { return g(bcastRoot, i); }), s);
    expectFloats(&failures, "all-gather small", agOut,
                 fill(n * S, [&](size_t i) { return g(static_cast<int>(i / S), i % S); }), s);
    expectFloats(&failures, "reduce-scatter large", rsOut, fill(R, [&](size_t i) { return sumF(rank * R + i); }), s);
    if (rank == reduceRoot)
      expectFloats(&failures, "reduce max small at the root", rdOut,
                   fill(S,
                        [&](size_t i) {
                          int m = 0;
                          for (int r = 0; r < n; ++r) m = std::max(m, h(r, i));
                          return m;
                        }),
                   s);
    expectFloats(&failures, "all-to-all", a2aOut,
                 fill(n * C, [&](size_t i) { return a2a(static_cast<int>(i / C), rank, i % C); }), s);
    expectFloats(&failures, "send/recv ring", ringIn, fill(L, [&](size_t i) { return ring(prev, i); }), s);
    expectFloats(&failures, "all-reduce avg in place", avg, fill(S, [&](size_t i) { return sumF(i) / double(n); }), s);
    expectFloats(&failures, "broadcast small in place", bcInPlace, fill(S, [&](size_t i) { return g(smallRoot, i); }),
                 s);
    finish(comm, &failures);
  }
  cudaStreamDestroy(s);
  return failures;
}

// ---- CUDA's named default streams ----

// cudaStreamPerThread (and cudaStreamLegacy, for one rank per process: torch's default stream) are
// streams to the library like any other, though their handles are not real stream objects; NULL
// alone means host buffers, and a device buffer passed with it is refused. The legacy stream is one stream for every
// thread of a context, so ranks that are threads cannot each use it: they use their per-thread streams here.
Failures perThreadStreamRank(int rank, int n, const StorePtr& store) {
  const size_t S = 1000, L = 600000;
  auto f = [](int r, size_t i) { return r + 1 + static_cast<int>(i % 5); };
  auto sumF = [&](size_t i) { return n * (n + 1) / 2 + n * static_cast<int>(i % 5); };
  const cudaStream_t s = cudaStreamPerThread;
  CHECK_CUDA(cudaSetDevice(0));
  Failures failures;
  {
    Arena arena;
    float* large = arena.make(L, fill(L, [&](size_t i) { return f(rank, i); }), s);
    float* small = arena.make(S, fill(S, [&](size_t i) { return f(rank, i); }), s);
    if (large == nullptr || small == nullptr) return {"cudaMalloc failed"};
    CHECK_CUDA(cudaStreamSynchronize(s));
    collComm_t comm = initComm(store, n, rank, &failures);
    if (comm == nullptr) return failures;
    // A device buffer with a NULL stream (host buffers) is refused before anything is touched:
    // the sums below are right only if nothing was written.
    const collResult_t refused = collAllReduce(small, small, S, collFloat, collSum, comm, nullptr);
    if (refused != collInvalidArgument)
      failures.push_back(std::string("a device buffer with a NULL stream gave ") + collGetErrorString(refused) +
                         ", expected collInvalidArgument");
    CHECK_COLL(collAllReduce(large, large, L, collFloat, collSum, comm, s), comm);
    CHECK_COLL(collAllReduce(small, small, S, collFloat, collSum, comm, s), comm);
    CHECK_CUDA(cudaStreamSynchronize(s));
    expectFloats(&failures, "all-reduce large on cudaStreamPerThread", large, fill(L, sumF), s);
    expectFloats(&failures, "all-reduce small on cudaStreamPerThread", small, fill(S, sumF), s);
    finish(comm, &failures);
  }
  return failures;
}

// ---- graph capture and replay ----

cudaStreamCaptureMode captureMode(std::string* name) {
  const char* v = getenv("COLL_GPU_API_CAPTURE_MODE");
  *name = v != nullptr ? v : "thread_local";
  if (*name == "relaxed") return cudaStreamCaptureModeRelaxed;
  if (*name == "global") return cudaStreamCaptureModeGlobal;
  *name = "thread_local";
  return cudaStreamCaptureModeThreadLocal;
}

Failures graphRank(int rank, int n, const StorePtr& store) {
  const size_t S = 1000, L = 600000;                       // LL and Simple in one graph
  const float base = static_cast<float>(n * (n + 1) / 2);  // the sum of rank + 1 over the ranks
  std::string modeName;
  const cudaStreamCaptureMode mode = captureMode(&modeName);
  CHECK_CUDA(cudaSetDevice(0));
  cudaStream_t a = nullptr, b = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  Failures failures;
  {
    Arena arena;
    const std::vector<float> mineS(S, static_cast<float>(rank + 1)), mineL(L, static_cast<float>(rank + 1));
    float* setup = arena.make(S, mineS, b);
    float* gS = arena.make(S, mineS, b);
    float* gL = arena.make(L, mineL, b);
    float* eL = arena.make(L, mineL, b);
    if (eL == nullptr) return {"cudaMalloc failed"};
    CHECK_CUDA(cudaStreamSynchronize(b));
    collComm_t comm = initComm(store, n, rank, &failures);
    if (comm == nullptr) return failures;
    AbortUnlessFinished guard{comm};
    // The lazy device setup waits for the other ranks through the store: never inside a capture.
    CHECK_COLL(collAllReduce(setup, setup, S, collFloat, collSum, comm, b), comm);
    CHECK_CUDA(cudaStreamSynchronize(b));

    CHECK_CUDA(cudaStreamBeginCapture(a, mode));
    const collResult_t small = collAllReduce(gS, gS, S, collFloat, collSum, comm, a);
    const std::string smallError = small == collSuccess ? "" : lastError(comm);
    const collResult_t large = collAllReduce(gL, gL, L, collFloat, collSum, comm, a);
    const std::string largeError = large == collSuccess ? "" : lastError(comm);
    const cudaError_t ended = cudaStreamEndCapture(a, &graph);
    if (small != collSuccess || large != collSuccess || ended != cudaSuccess)
      return {"capture (" + modeName + "): small all-reduce: " + smallError + "; large: " + largeError +
              "; cudaStreamEndCapture: " + cudaGetErrorString(ended)};
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    // Captured, not run: the buffers still hold this rank's values.
    expectFloats(&failures, "captured buffer before any replay", gS, mineS, b);

    // Replay on A, eager on B, three times: the library sees only the eager calls, and its event
    // chain must still keep every replay and eager launch apart (they share channel slots).
    for (int k = 0; k < 3; ++k) {
      CHECK_CUDA(cudaGraphLaunch(exec, a));
      CHECK_COLL(collAllReduce(eL, eL, L, collFloat, collSum, comm, b), comm);
    }
    CHECK_CUDA(cudaStreamSynchronize(a));
    CHECK_CUDA(cudaStreamSynchronize(b));
    const float thrice = base * n * n;
    expectFloats(&failures, "eager setup all-reduce", setup, std::vector<float>(S, base), b);
    expectFloats(&failures, "graph small all-reduce after 3 replays (" + modeName + ")", gS,
                 std::vector<float>(S, thrice), b);
    expectFloats(&failures, "graph large all-reduce after 3 replays (" + modeName + ")", gL,
                 std::vector<float>(L, thrice), b);
    expectFloats(&failures, "eager all-reduces between the replays", eL, std::vector<float>(L, thrice), b);
    guard.finished = true;
    finish(comm, &failures);
  }
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  return failures;
}

// ---- two communicators ----

Failures twoCommsRank(int rank, int n, const StorePtr& store1, const StorePtr& store2) {
  const size_t S = 1000, L = 600000;
  const float base = static_cast<float>(n * (n + 1) / 2);
  CHECK_CUDA(cudaSetDevice(0));
  cudaStream_t a = nullptr, b = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  Failures failures;
  {
    Arena arena;
    float* a1 = arena.make(L, std::vector<float>(L, static_cast<float>(rank + 1)), a);
    float* a2 = arena.make(S, std::vector<float>(S, static_cast<float>(rank + 1)), a);
    float* b1 = arena.make(L, std::vector<float>(L, static_cast<float>(2 * (rank + 1))), a);
    float* b2 = arena.make(S, std::vector<float>(S, static_cast<float>(2 * (rank + 1))), a);
    if (b2 == nullptr) return {"cudaMalloc failed"};
    CHECK_CUDA(cudaStreamSynchronize(a));
    collComm_t one = initComm(store1, n, rank, &failures);
    if (one == nullptr) return failures;
    collComm_t two = initComm(store2, n, rank, &failures);
    if (two == nullptr) return failures;
    // Each communicator has its own channel memory and event chain: their launches may overlap.
    for (int k = 0; k < 3; ++k) {
      CHECK_COLL(collAllReduce(a1, a1, L, collFloat, collSum, one, a), one);
      CHECK_COLL(collAllReduce(b1, b1, L, collFloat, collSum, two, b), two);
      CHECK_COLL(collAllReduce(b2, b2, S, collFloat, collSum, two, b), two);
      CHECK_COLL(collAllReduce(a2, a2, S, collFloat, collSum, one, a), one);
    }
    CHECK_CUDA(cudaStreamSynchronize(a));
    CHECK_CUDA(cudaStreamSynchronize(b));
    const float thrice = base * n * n;
    expectFloats(&failures, "communicator 1 large", a1, std::vector<float>(L, thrice), a);
    expectFloats(&failures, "communicator 1 small", a2, std::vector<float>(S, thrice), a);
    expectFloats(&failures, "communicator 2 large", b1, std::vector<float>(L, 2 * thrice), a);
    expectFloats(&failures, "communicator 2 small", b2, std::vector<float>(S, 2 * thrice), a);
    finish(one, &failures);
    finish(two, &failures);
  }
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  return failures;
}

// ---- abort ----

struct AbortShared {
  std::atomic<bool> rank0Done{false};
};

// Rank 0 makes an all-reduce that rank 1 never joins; another thread aborts a second later. The
// kernel waits for rank 1's flags and sees the abort flag (DeviceStatus.abort, host-mapped) at
// its next poll, so the stream must end within a few seconds of the abort, long before the
// kernel's own timeout. collCommAbort frees the communicator (API.md), so rank 0 cannot ask it
// for its error afterwards: rank 1 can, and must learn of the abort from its
// collCommGetAsyncError (rank 0 announced its failure through the host transports).
Failures abortRank(int rank, int n, const StorePtr& store, AbortShared* shared) {
  const size_t S = 1000, L = 600000;
  CHECK_CUDA(cudaSetDevice(0));
  cudaStream_t s = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Failures failures;
  {
    Arena arena;
    float* setup = arena.make(S, std::vector<float>(S, 1.0f), s);
    float* big = arena.make(L, std::vector<float>(L, 1.0f), s);
    if (big == nullptr) return {"cudaMalloc failed"};
    CHECK_CUDA(cudaStreamSynchronize(s));
    collComm_t comm = initComm(store, n, rank, &failures);
    if (comm == nullptr) return failures;
    // Both ranks join the lazy device setup; after it rank 1 makes no call.
    CHECK_COLL(collAllReduce(setup, setup, S, collFloat, collSum, comm, s), comm);
    CHECK_CUDA(cudaStreamSynchronize(s));
    expectFloats(&failures, "the setup all-reduce", setup, std::vector<float>(S, static_cast<float>(n)), s);
    if (rank == 0) {
      CHECK_COLL(collAllReduce(big, big, L, collFloat, collSum, comm, s), comm);
      CHECK_COLL(collAllReduce(setup, setup, S, collFloat, collSum, comm, s), comm);  // queued behind it
      const Clock::time_point start = Clock::now();
      std::atomic<long> abortAt{-1}, abortReturned{-1};
      std::atomic<int> abortResult{-1};
      std::thread aborter([&] {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        abortAt.store(msSince(start));
        abortResult.store(collCommAbort(comm));
        abortReturned.store(msSince(start));
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(900));
      const cudaError_t before = cudaStreamQuery(s);
      if (before != cudaErrorNotReady)
        failures.push_back(std::string("the all-reduce without its peer was not pending after 0.9 s: ") +
                           cudaGetErrorString(before));
      cudaError_t q = cudaErrorNotReady;
      while ((q = cudaStreamQuery(s)) == cudaErrorNotReady && msSince(start) < 11000)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const long endedAt = msSince(start);
      aborter.join();
      printf(
          "INFO gpu_api abort: collCommAbort called at %ld ms, returned at %ld ms; the stream ended at %ld ms (%s)\n",
          abortAt.load(), abortReturned.load(), endedAt, q == cudaErrorNotReady ? "not ended" : cudaGetErrorString(q));
      if (abortResult.load() != collSuccess)
        failures.push_back(std::string("collCommAbort: ") +
                           collGetErrorString(static_cast<collResult_t>(abortResult.load())));
      if (q == cudaErrorNotReady)
        failures.push_back("the stream had not ended 10 s after collCommAbort");
      else if (q != cudaSuccess)
        failures.push_back(std::string("the stream ended with an error: ") + cudaGetErrorString(q));
      else if (endedAt - abortAt.load() > 5000)
        failures.push_back("the stream ended " + std::to_string(endedAt - abortAt.load()) +
                           " ms after collCommAbort (expected within 5 s)");
      shared->rank0Done.store(true);
    } else {
      const Clock::time_point start = Clock::now();
      while (!shared->rank0Done.load() && msSince(start) < timeoutMs())
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      collResult_t async = collSuccess;
      const Clock::time_point asked = Clock::now();
      while (msSince(asked) < 5000) {
        if (collCommGetAsyncError(comm, &async) != collSuccess) {
          failures.push_back("collCommGetAsyncError: " + lastError(comm));
          break;
        }
        if (async != collSuccess) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      printf("INFO gpu_api abort: rank 1's collCommGetAsyncError gave %s\n", collGetErrorString(async));
      if (async == collSuccess) failures.push_back("rank 0's abort never reached rank 1's collCommGetAsyncError");
      // The peer is gone: destroy's barrier would wait for it; abort does not.
      if (collCommAbort(comm) != collSuccess) failures.push_back("collCommAbort on rank 1: " + lastError(nullptr));
    }
  }
  cudaStreamDestroy(s);
  return failures;
}

}  // namespace

bool checkBackToBack(int n) { return runRankThreads("back-to-back calls n=" + std::to_string(n), n, backToBackRank); }

bool checkPerThreadStream(int n) {
  return runRankThreads("calls on cudaStreamPerThread n=" + std::to_string(n), n, perThreadStreamRank);
}

bool checkGraphReplay(int n) {
  std::string mode;
  captureMode(&mode);
  return runRankThreads("graph capture (" + mode + ") and replay n=" + std::to_string(n), n, graphRank);
}

bool checkTwoCommunicators(int n) {
  auto second = std::make_shared<coll::bootstrap::MemoryStore>();
  return runRankThreads(
      "two communicators n=" + std::to_string(n), n,
      [&](int rank, int nranks, const StorePtr& store) { return twoCommsRank(rank, nranks, store, second); });
}

bool checkAbortUnblocks() {
  AbortShared shared;
  return runRankThreads("abort ends a pending device call n=2", 2, [&](int rank, int nranks, const StorePtr& store) {
    return abortRank(rank, nranks, store, &shared);
  });
}

}  // namespace gpuapi
