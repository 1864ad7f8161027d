// Every argument rule of docs/api.md: a bad argument returns collInvalidArgument, names the function
// and the value in collGetLastError, writes nothing, touches no peer, and the communicator keeps
// working (a correct collective right after still gives the right answer on every rank).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "collective.h"
#include "collective_cases.h"
#include "rank_launcher.h"
#include "reference.h"

namespace colltest {
namespace {

struct Expectation {
  std::string name;
  std::function<collResult_t(collComm_t, void* send, void* recv)> call;
  std::vector<std::string> mustMention;
};

std::vector<Expectation> badCalls(int nranks) {
  const size_t n = 4;
  return {
      {"NULL comm",
       [](collComm_t, void* s, void* r) { return collAllReduce(s, r, n, collFloat, collSum, nullptr, nullptr); },
       {"collAllReduce", "comm is NULL"}},
      {"NULL sendbuff",
       [](collComm_t c, void*, void* r) { return collAllReduce(nullptr, r, n, collFloat, collSum, c, nullptr); },
       {"collAllReduce", "sendbuff is NULL", "count 4"}},
      {"NULL recvbuff",
       [](collComm_t c, void* s, void*) { return collAllGather(s, nullptr, n, collInt32, c, nullptr); },
       {"collAllGather", "recvbuff is NULL"}},
      {"datatype too large",
       [](collComm_t c, void* s, void* r) { return collAllReduce(s, r, n, collNumTypes, collSum, c, nullptr); },
       {"collAllReduce", "datatype 10", "[0, 10)"}},
      {"datatype negative",
       [](collComm_t c, void* s, void* r) {
         return collBroadcast(s, r, n, static_cast<collDataType_t>(-1), 0, c, nullptr);
       },
       {"collBroadcast", "datatype -1"}},
      {"op too large",
       [](collComm_t c, void* s, void* r) { return collReduce(s, r, n, collFloat, collNumOps, 0, c, nullptr); },
       {"collReduce", "op 5"}},
      {"op negative",
       [](collComm_t c, void* s, void* r) {
         return collReduceScatter(s, r, 1, collFloat, static_cast<collRedOp_t>(-3), c, nullptr);
       },
       {"collReduceScatter", "op -3"}},
      {"root too large",
       [nranks](collComm_t c, void* s, void* r) { return collBroadcast(s, r, n, collFloat, nranks, c, nullptr); },
       {"collBroadcast", "root " + std::to_string(nranks)}},
      {"root negative",
       [](collComm_t c, void* s, void* r) { return collGather(s, r, 1, collFloat, -1, c, nullptr); },
       {"collGather", "root -1"}},
      {"scatter root",
       [nranks](collComm_t c, void* s, void* r) { return collScatter(s, r, 1, collFloat, nranks + 5, c, nullptr); },
       {"collScatter", "root"}},
      {"peer too large",
       [nranks](collComm_t c, void* s, void*) { return collSend(s, n, collFloat, nranks, c, nullptr); },
       {"collSend", "peer " + std::to_string(nranks)}},
      {"peer negative",
       [](collComm_t c, void*, void* r) { return collRecv(r, n, collFloat, -2, c, nullptr); },
       {"collRecv", "peer -2"}},
      {"count overflows",
       [](collComm_t c, void* s, void* r) { return collAllReduce(s, r, SIZE_MAX / 2, collFloat, collSum, c, nullptr); },
       {"collAllReduce", "overflows"}},
      {"alltoall count overflows",
       [](collComm_t c, void* s, void* r) { return collAllToAll(s, r, SIZE_MAX / 2, collUint8, c, nullptr); },
       {"collAllToAll", "overflows"}},
      // Byte sizes that fit in size_t but in no address space (issue 48): refused, not run.
      {"count past the address space",
       [](collComm_t c, void* s, void* r) {
         return collAllReduce(s, r, 0x3fffffffffffffff, collFloat, collSum, c, nullptr);
       },
       {"collAllReduce", "count 4611686018427387903", "address space"}},
      // A send buffer that could be there, and a receive buffer of three times its size that could
      // not: addresses only, never touched.
      {"all-gather's receive buffer past the address space",
       [](collComm_t c, void*, void*) {
         return collAllGather(reinterpret_cast<void*>(0x10000), reinterpret_cast<void*>(uint64_t{1} << 46),
                              uint64_t{1} << 46, collUint8, c, nullptr);
       },
       {"collAllGather", "recvbuff", "address space"}},
      {"partial overlap",
       [](collComm_t c, void* s, void*) {
         return collAllReduce(s, static_cast<char*>(s) + 4, n, collFloat, collSum, c, nullptr);
       },
       {"collAllReduce", "overlap"}},
  };
}

TEST(BadInput, EveryRuleGivesInvalidArgumentAndTheCommunicatorKeepsWorking) {
  const int nranks = 3;
  auto failures = runAsThreads(nranks, [](collComm_t comm, int rank, int nranks) {
    std::vector<std::string> problems;
    for (const Expectation& e : badCalls(nranks)) {
      std::vector<unsigned char> send(4096), recv(4096);
      poison(send.data(), send.size());
      poison(recv.data(), recv.size());
      collResult_t rc = e.call(comm, send.data(), recv.data());
      std::string message = collGetLastError(comm);
      if (rc != collInvalidArgument)
        problems.push_back(e.name + ": returned " + std::to_string(rc) + " (" + message + ")");
      for (const std::string& word : e.mustMention)
        if (message.find(word) == std::string::npos)
          problems.push_back(e.name + ": message \"" + message + "\" lacks \"" + word + "\"");
      if (!isPoisoned(recv.data(), recv.size()) || !isPoisoned(send.data(), send.size()))
        problems.push_back(e.name + ": a buffer was written");
      // A valid collective right after: every rank must still agree.
      std::string after = runCase(comm, rank, nranks, {Coll::kAllReduce, collInt32, collSum, 5, 0, false});
      if (!after.empty()) problems.push_back(e.name + ": communicator broken afterwards: " + after);
    }
    return problems;
  });
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// Issue 48: an all-reduce of 0x3fffffffffffffff floats and a reduce-scatter of 0x1fffffffffffffff
// (their bytes fit in size_t) passed validation, never returned despite the timeout and grew by
// gigabytes. Now each is refused at once on every rank. Two processes, each with its address
// space capped, and a deadline: a call that runs, grows or hangs fails the test instead of the
// machine.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kUnderSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kUnderSanitizer = true;
#else
constexpr bool kUnderSanitizer = false;
#endif
#else
constexpr bool kUnderSanitizer = false;
#endif

TEST(BadInput, CountsNoBufferCanHoldAreRefusedAtOnce) {
  constexpr rlim_t kAddressSpaceCap = rlim_t{4} << 30;
  auto failures = runAsProcessesWithSetup(
      2,
      [](int) {
        // The cap turns an allocation that grows with the count into a quick failure. Sanitizers
        // reserve terabytes of shadow address space, which any such cap breaks: they run uncapped.
        if (!kUnderSanitizer) {
          const rlimit cap{kAddressSpaceCap, kAddressSpaceCap};
          setrlimit(RLIMIT_AS, &cap);
        }
        setenv("COLL_TIMEOUT_MS", "10000", 1);
      },
      [](collComm_t comm, int rank, int) {
        std::vector<std::string> problems;
        const std::string me = "rank " + std::to_string(rank) + ": ";
        std::vector<float> send(16, 1.0f), recv(16, 0.0f);
        const auto start = std::chrono::steady_clock::now();
        collResult_t rc = collAllReduce(send.data(), recv.data(), 0x3fffffffffffffff, collFloat, collSum, comm, nullptr);
        if (rc != collInvalidArgument || std::string(collGetLastError(comm)).find("address space") == std::string::npos)
          problems.push_back(me + "all-reduce of 0x3fffffffffffffff floats: " + collGetErrorString(rc) + ": " +
                             collGetLastError(comm));
        rc = collReduceScatter(send.data(), recv.data(), 0x1fffffffffffffff, collFloat, collSum, comm, nullptr);
        if (rc != collInvalidArgument || std::string(collGetLastError(comm)).find("address space") == std::string::npos)
          problems.push_back(me + "reduce-scatter of 0x1fffffffffffffff floats: " + collGetErrorString(rc) + ": " +
                             collGetLastError(comm));
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (seconds > 1.0) problems.push_back(me + "the refusals took " + std::to_string(seconds) + " s");
        if (recv[0] != 0.0f) problems.push_back(me + "the receive buffer was written");
        // Nothing was sent: the communicator still works.
        rc = collAllReduce(send.data(), recv.data(), 16, collFloat, collSum, comm, nullptr);
        if (rc != collSuccess || recv[0] != 2.0f) problems.push_back(me + "all-reduce after: " + collGetLastError(comm));
        return problems;
      },
      initMustSucceed(), 30);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST(BadInput, CountZeroIsANoOpOnEveryRank) {
  auto failures = runAsThreads(2, [](collComm_t comm, int, int) {
    std::vector<std::string> problems;
    // NULL buffers are fine with count 0.
    if (collAllReduce(nullptr, nullptr, 0, collFloat, collSum, comm, nullptr) != collSuccess)
      problems.push_back("allreduce 0");
    if (collAllToAll(nullptr, nullptr, 0, collFloat, comm, nullptr) != collSuccess) problems.push_back("alltoall 0");
    if (collSend(nullptr, 0, collFloat, 0, comm, nullptr) != collSuccess) problems.push_back("send 0");
    return problems;
  });
  EXPECT_TRUE(failures.empty());
}

TEST(BadInput, LifecycleArguments) {
  collUniqueId id;
  ASSERT_EQ(collGetUniqueId(&id), collSuccess);
  collComm_t comm;
  EXPECT_EQ(collCommInitRank(nullptr, 1, id, 0), collInvalidArgument);
  EXPECT_EQ(collCommInitRank(&comm, 0, id, 0), collInvalidArgument);
  EXPECT_NE(std::string(collGetLastError(nullptr)).find("nranks 0"), std::string::npos);
  EXPECT_EQ(collCommInitRank(&comm, 2, id, 2), collInvalidArgument);
  EXPECT_NE(std::string(collGetLastError(nullptr)).find("rank 2"), std::string::npos);
  collUniqueId garbage;
  memset(&garbage, 0x5a, sizeof(garbage));
  EXPECT_EQ(collCommInitRank(&comm, 1, garbage, 0), collInvalidArgument);
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.magic = 0;
  EXPECT_EQ(collCommInitRankConfig(&comm, 1, id, 0, &config), collInvalidArgument);
  EXPECT_NE(std::string(collGetLastError(nullptr)).find("COLL_CONFIG_INITIALIZER"), std::string::npos);
  int value;
  EXPECT_EQ(collCommCount(nullptr, &value), collInvalidArgument);
  EXPECT_EQ(collGetVersion(nullptr), collInvalidArgument);
  EXPECT_EQ(collGetVersion(&value), collSuccess);
  EXPECT_EQ(value, COLL_VERSION_CODE);
  EXPECT_STRNE(collGetErrorString(static_cast<collResult_t>(999)), nullptr);
  EXPECT_EQ(collGroupEnd(), collInvalidUsage);

  config = COLL_CONFIG_INITIALIZER;
  config.commName = "lifecycle";
  ASSERT_EQ(collCommInitRankConfig(&comm, 1, id, 0, &config), collSuccess) << collGetLastError(nullptr);
  int device = 0;
  EXPECT_EQ(collCommCuDevice(comm, &device), collSuccess);
  EXPECT_EQ(device, -1);
  collResult_t async = collInternalError;
  EXPECT_EQ(collCommGetAsyncError(comm, &async), collSuccess);
  EXPECT_EQ(async, collSuccess);
  float x = 1, y = 0;
  EXPECT_EQ(collAllReduce(&x, &y, 1, collFloat, collSum, comm, reinterpret_cast<collStream_t>(0x1)), collInvalidUsage);
  EXPECT_EQ(y, 0);
  EXPECT_EQ(collCommFinalize(comm), collSuccess);
  EXPECT_EQ(collCommDestroy(comm), collSuccess);
}

}  // namespace
}  // namespace colltest
