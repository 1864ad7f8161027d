// The variable-count collectives (vcoll_cases.h) on 1..8 ranks as threads and as processes, on
// two simulated hosts, and their refusals: bad arrays name the function, the entry and what was
// expected, and write nothing; counts that differ between ranks fail without writing past a
// buffer.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "guarded_memory.h"
#include "rank_launcher.h"
#include "reference.h"
#include "test_env.h"
#include "transport/domain.h"
#include "transport_counts.h"
#include "vcoll_cases.h"

namespace colltest {
namespace {

const bool kTestEnvironmentApplied = applyTestEnvironment();  // test_env.h

RankBody standardBody() {
  return [](collComm_t comm, int rank, int nranks) { return runVCases(comm, rank, nranks, standardVCases()); };
}

class VCollectivesAsThreads : public ::testing::TestWithParam<int> {};
class VCollectivesAsThreadsInMemory : public ::testing::TestWithParam<int> {};
class VCollectivesAsProcesses : public ::testing::TestWithParam<int> {};
class VCollectivesOnTwoSimulatedHosts : public ::testing::TestWithParam<int> {};

TEST_P(VCollectivesAsThreads, AllCasesMatchReference) {
  auto failures = runAsThreads(GetParam(), standardBody());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST_P(VCollectivesAsThreadsInMemory, AllCasesMatchReference) {
  auto failures = runAsThreadsWithMemoryStore(GetParam(), standardBody());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST_P(VCollectivesAsProcesses, AllCasesMatchReference) {
  auto failures = runAsProcesses(GetParam(), standardBody());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// Shared memory within each simulated host, sockets between them; the ring runs in host order.
TEST_P(VCollectivesOnTwoSimulatedHosts, AllCasesMatchReference) {
  auto failures = runAsProcessesWithSetup(
      GetParam(), [](int rank) { setenv("COLL_HOSTID", rank % 2 ? "odd-host" : "even-host", 1); }, standardBody(),
      initMustSucceed());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

std::string rankCountName(const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param) + "ranks"; }

INSTANTIATE_TEST_SUITE_P(Ranks, VCollectivesAsThreads, ::testing::Range(1, 9), rankCountName);
INSTANTIATE_TEST_SUITE_P(Ranks, VCollectivesAsThreadsInMemory, ::testing::Values(2, 5), rankCountName);
INSTANTIATE_TEST_SUITE_P(Ranks, VCollectivesAsProcesses, ::testing::Values(1, 2, 3, 4, 7), rankCountName);
INSTANTIATE_TEST_SUITE_P(Ranks, VCollectivesOnTwoSimulatedHosts, ::testing::Values(3), rankCountName);

// A refused call: collInvalidArgument (or the expected code), a message with every fragment, and
// the receive buffer still poisoned.
struct Refusal {
  collResult_t code;
  std::vector<std::string> fragments;
};

std::string expectRefused(collComm_t comm, collResult_t rc, const Refusal& want, const GuardedMemory& recv,
                          const char* what) {
  std::string problems;
  if (rc != want.code)
    problems += std::string(what) + ": returned " + collGetErrorString(rc) + ", expected " +
                collGetErrorString(want.code) + "; ";
  const std::string message = collGetLastError(comm);
  for (const std::string& fragment : want.fragments)
    if (message.find(fragment) == std::string::npos)
      problems += std::string(what) + ": message \"" + message + "\" lacks \"" + fragment + "\"; ";
  if (!isPoisoned(const_cast<GuardedMemory&>(recv).data(), recv.bytes()))
    problems += std::string(what) + ": wrote the receive buffer; ";
  return problems;
}

// Every rank makes the same bad calls (each is refused locally, before any peer is touched), then
// a good one, which must still work.
TEST(VCollectiveErrors, BadArraysAreRefusedAndWriteNothing) {
  auto failures = runAsThreads(3, [](collComm_t comm, int rank, int nranks) {
    std::vector<std::string> out;
    const size_t kElems = 64;
    GuardedMemory send(kElems * 4), recv(kElems * 4);
    poison(recv.data(), recv.bytes());
    std::vector<size_t> counts(nranks, 4), displs(nranks);
    for (int p = 0; p < nranks; ++p) displs[p] = 4 * p;
    auto check = [&](collResult_t rc, const Refusal& want, const char* what) {
      std::string problem = expectRefused(comm, rc, want, recv, what);
      if (!problem.empty()) out.push_back("rank " + std::to_string(rank) + ": " + problem);
    };
    void* r = recv.data();
    const void* s = send.data();
    check(collAllGatherV(s, 4, r, nullptr, displs.data(), collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllGatherV", "recvcounts is NULL", "3 entries"}}, "NULL recvcounts");
    check(collAllGatherV(s, 4, r, counts.data(), nullptr, collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllGatherV", "displs is NULL"}}, "NULL displs");
    check(collAllGatherV(s, 5, r, counts.data(), displs.data(), collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllGatherV", "sendcount 5", "recvcounts[" + std::to_string(rank) + "] = 4"}},
          "sendcount not its entry");
    std::vector<size_t> overflowing(nranks, 4);
    overflowing[(rank + 1) % nranks] = SIZE_MAX;
    check(collAllGatherV(s, 4, r, overflowing.data(), displs.data(), collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllGatherV", "overflows size_t"}}, "counts that overflow");
    std::vector<size_t> farDispls = displs;
    farDispls[(rank + 1) % nranks] = SIZE_MAX - 2;
    check(collAllGatherV(s, 4, r, counts.data(), farDispls.data(), collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllGatherV", "displs[", "overflows size_t"}}, "displacement past size_t");
    std::vector<size_t> hugeDispls = displs;
    hugeDispls[(rank + 1) % nranks] = size_t{1} << 60;
    check(collAllGatherV(s, 4, r, counts.data(), hugeDispls.data(), collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllGatherV", "recvbuff", "past the end of the address space"}},
          "displacement past the address space");
    std::vector<size_t> overlapping = displs;
    if (nranks > 1) overlapping[1] = 2;  // rank 1's 4 elements start inside rank 0's
    if (nranks > 1)
      check(collAllGatherV(s, 4, r, counts.data(), overlapping.data(), collInt32, comm, nullptr),
            {collInvalidArgument, {"collAllGatherV", "overlap", "displs[1] = 2"}}, "overlapping displacements");
    // Out of rank order (checked after sorting): rank 2's region first, rank 0's inside rank 1's.
    const std::vector<size_t> unordered = {6, 4, 0};
    check(collAllGatherV(s, 4, r, counts.data(), unordered.data(), collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllGatherV", "overlap", "displs[1] = 4", "displs[0] = 6"}},
          "overlapping displacements out of rank order");
    // One element into the receive buffer: inside it, but at no rank's place.
    check(collAllGatherV(static_cast<uint8_t*>(r) + 4, 4, r, counts.data(), displs.data(), collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllGatherV", "overlap without being in place", "displs[rank]"}},
          "send inside receive, not at its place");
    // ReduceScatterV: the send buffer holds every block.
    check(collReduceScatterV(s, r, nullptr, collInt32, collSum, comm, nullptr),
          {collInvalidArgument, {"collReduceScatterV", "recvcounts is NULL"}}, "reduce-scatter: NULL recvcounts");
    check(collReduceScatterV(s, r, counts.data(), collInt32, static_cast<collRedOp_t>(42), comm, nullptr),
          {collInvalidArgument, {"collReduceScatterV", "op 42"}}, "reduce-scatter: bad op");
    check(collReduceScatterV(s, r, overflowing.data(), collInt32, collSum, comm, nullptr),
          {collInvalidArgument, {"collReduceScatterV", "sum of recvcounts overflows"}}, "reduce-scatter: overflow");
    check(collReduceScatterV(s, send.data() + 2, counts.data(), collInt32, collSum, comm, nullptr),
          {collInvalidArgument, {"collReduceScatterV", "overlap without being in place", "recvcounts[0]"}},
          "reduce-scatter: receive inside send, not at its block");
    // AllToAllV: four arrays, the own entries equal, receive regions apart.
    const size_t* z = nullptr;
    const size_t* c4 = counts.data();
    const size_t* d4 = displs.data();
    check(collAllToAllV(s, z, d4, r, c4, d4, collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllToAllV", "sendcounts is NULL"}}, "all-to-all: NULL sendcounts");
    check(collAllToAllV(s, c4, z, r, c4, d4, collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllToAllV", "sdispls is NULL"}}, "all-to-all: NULL sdispls");
    check(collAllToAllV(s, c4, d4, r, z, d4, collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllToAllV", "recvcounts is NULL"}}, "all-to-all: NULL recvcounts");
    check(collAllToAllV(s, c4, d4, r, c4, z, collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllToAllV", "rdispls is NULL"}}, "all-to-all: NULL rdispls");
    std::vector<size_t> otherOwn = counts;
    otherOwn[rank] = 3;
    check(collAllToAllV(s, otherOwn.data(), d4, r, c4, d4, collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllToAllV", "sendcounts[" + std::to_string(rank) + "] = 3", "recvcounts["}},
          "all-to-all: own counts differ");
    if (nranks > 1)
      check(collAllToAllV(s, c4, d4, r, c4, overlapping.data(), collInt32, comm, nullptr),
            {collInvalidArgument, {"collAllToAllV", "overlap", "rdispls[1] = 2"}},
            "all-to-all: receive regions overlap");
    check(collAllToAllV(s, c4, farDispls.data(), r, c4, d4, collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllToAllV", "sdispls[", "overflows size_t"}}, "all-to-all: send past size_t");
    check(collAllToAllV(r, c4, d4, r, c4, d4, collInt32, comm, nullptr),
          {collInvalidArgument, {"collAllToAllV", "overlap without being in place"}}, "all-to-all: in place");
    check(collAllGatherV(s, 4, r, counts.data(), displs.data(), static_cast<collDataType_t>(99), comm, nullptr),
          {collInvalidArgument, {"collAllGatherV", "datatype 99"}}, "bad datatype");
    collGroupStart();
    collResult_t grouped = collAllGatherV(s, 5, r, counts.data(), displs.data(), collInt32, comm, nullptr);
    collGroupEnd();
    check(grouped, {collInvalidArgument, {"collAllGatherV", "sendcount 5"}}, "inside a group, refused at once");
    return out;
  });
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// The three variable-count collectives queued in one group, each rank's arrays overwritten after
// each call and before collGroupEnd (the queue must have kept copies), then every output checked
// against values computed here, with guard zones around every buffer.
// A small all-to-all-v exchanges through one slot a pair; a rank with a pair too large for that
// runs the pairwise schedule. Here ranks 1 and 2 exchange 40 KB with each other and a few bytes
// with rank 0: rank 0 takes the slots, ranks 1 and 2 the schedule, and every pair must still
// meet (the same tags on both paths), over calls enough to wrap the FIFOs.
RankBody mixedPathsBody() {
  return [](collComm_t comm, int rank, int n) {
    std::vector<std::string> out;
    auto countOf = [](int from, int to) {
      return (from == 0 || to == 0) ? static_cast<size_t>(from + to + 1) : size_t{10000};
    };
    auto valueOf = [](int from, int to, size_t i, int call) {
      return static_cast<int32_t>(100000 * from + 10000 * to + 7 * call + static_cast<int32_t>(i % 1000));
    };
    std::vector<size_t> sendcounts(n), sdispls(n), recvcounts(n), rdispls(n);
    size_t sent = 0, received = 0;
    for (int p = 0; p < n; ++p) {
      sendcounts[p] = countOf(rank, p);
      recvcounts[p] = countOf(p, rank);
      sdispls[p] = sent;
      rdispls[p] = received;
      sent += sendcounts[p];
      received += recvcounts[p];
    }
    GuardedMemory send(sent * 4), recv(received * 4);
    for (int call = 0; call < 40 && out.empty(); ++call) {
      auto* s = reinterpret_cast<int32_t*>(send.data());
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < sendcounts[p]; ++i) s[sdispls[p] + i] = valueOf(rank, p, i, call);
      poison(recv.data(), recv.bytes());
      collResult_t rc = collAllToAllV(send.data(), sendcounts.data(), sdispls.data(), recv.data(), recvcounts.data(),
                                      rdispls.data(), collInt32, comm, nullptr);
      if (rc != collSuccess) {
        out.push_back("rank " + std::to_string(rank) + " call " + std::to_string(call) + ": " + collGetLastError(comm));
        break;
      }
      const auto* r = reinterpret_cast<const int32_t*>(recv.data());
      for (int p = 0; p < n && out.empty(); ++p)
        for (size_t i = 0; i < recvcounts[p]; ++i)
          if (r[rdispls[p] + i] != valueOf(p, rank, i, call)) {
            out.push_back("rank " + std::to_string(rank) + " call " + std::to_string(call) + ": element " +
                          std::to_string(i) + " from rank " + std::to_string(p) + " is " +
                          std::to_string(r[rdispls[p] + i]) + ", expected " +
                          std::to_string(valueOf(p, rank, i, call)));
            break;
          }
    }
    const std::string damage = send.damage("send buffer") + recv.damage("receive buffer");
    if (!damage.empty()) out.push_back("rank " + std::to_string(rank) + ": " + damage);
    return out;
  };
}

TEST(VCollectivesMixedPaths, SlotPairsAndScheduledPairsMeetAsThreads) {
  auto failures = runAsThreads(3, mixedPathsBody());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST(VCollectivesMixedPaths, SlotPairsAndScheduledPairsMeetAsProcesses) {
  auto failures = runAsProcesses(3, mixedPathsBody());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST(VCollectivesInGroups, QueuedCallsKeepTheirArraysAndMatchReference) {
  for (int nranks : {1, 2, 3, 4}) {
    auto failures = runAsThreads(nranks, [](collComm_t comm, int rank, int n) {
      std::vector<std::string> out;
      auto valueOf = [](int from, size_t i, int to) { return static_cast<int32_t>(1000 * from + 10 * to + i); };
      // AllGatherV: rank p contributes p+1 elements, packed in rank order.
      std::vector<size_t> gatherCounts(n), gatherDispls(n);
      size_t gathered = 0;
      for (int p = 0; p < n; ++p) {
        gatherCounts[p] = static_cast<size_t>(p) + 1;
        gatherDispls[p] = gathered;
        gathered += gatherCounts[p];
      }
      GuardedMemory gatherSend(gatherCounts[rank] * 4), gatherRecv(gathered * 4);
      auto* gs = reinterpret_cast<int32_t*>(gatherSend.data());
      for (size_t i = 0; i < gatherCounts[rank]; ++i) gs[i] = valueOf(rank, i, 0);
      poison(gatherRecv.data(), gatherRecv.bytes());
      // ReduceScatterV: block p holds p+2 elements; every rank sends every block.
      std::vector<size_t> blockCounts(n);
      size_t total = 0, myOffset = 0;
      for (int p = 0; p < n; ++p) {
        blockCounts[p] = static_cast<size_t>(p) + 2;
        if (p < rank) myOffset += blockCounts[p];
        total += blockCounts[p];
      }
      GuardedMemory reduceSend(total * 4), reduceRecv(blockCounts[rank] * 4);
      auto* rs = reinterpret_cast<int32_t*>(reduceSend.data());
      for (size_t i = 0; i < total; ++i) rs[i] = valueOf(rank, i, 1);
      poison(reduceRecv.data(), reduceRecv.bytes());
      // AllToAllV: rank f sends rank t f+t+1 elements, packed in rank order on both sides.
      std::vector<size_t> sendCounts(n), sendDispls(n), recvCounts(n), recvDispls(n);
      size_t sent = 0, received = 0;
      for (int p = 0; p < n; ++p) {
        sendCounts[p] = static_cast<size_t>(rank + p) + 1;
        sendDispls[p] = sent;
        sent += sendCounts[p];
        recvCounts[p] = static_cast<size_t>(p + rank) + 1;
        recvDispls[p] = received;
        received += recvCounts[p];
      }
      GuardedMemory a2aSend(sent * 4), a2aRecv(received * 4);
      auto* as = reinterpret_cast<int32_t*>(a2aSend.data());
      for (int t = 0; t < n; ++t)
        for (size_t i = 0; i < sendCounts[t]; ++i) as[sendDispls[t] + i] = valueOf(rank, i, t);
      poison(a2aRecv.data(), a2aRecv.bytes());

      auto scribble = [](std::vector<size_t>* v) { std::fill(v->begin(), v->end(), size_t{7777777}); };
      collResult_t rcs[4];
      rcs[0] = collGroupStart();
      rcs[1] = collAllGatherV(gs, gatherCounts[rank], gatherRecv.data(), gatherCounts.data(), gatherDispls.data(),
                              collInt32, comm, nullptr);
      scribble(&gatherCounts);
      scribble(&gatherDispls);
      rcs[2] = collReduceScatterV(rs, reduceRecv.data(), blockCounts.data(), collInt32, collSum, comm, nullptr);
      const std::vector<size_t> blocks = blockCounts;
      scribble(&blockCounts);
      rcs[3] = collAllToAllV(as, sendCounts.data(), sendDispls.data(), a2aRecv.data(), recvCounts.data(),
                             recvDispls.data(), collInt32, comm, nullptr);
      const std::vector<size_t> fromCounts = recvCounts, fromDispls = recvDispls;
      for (auto* v : {&sendCounts, &sendDispls, &recvCounts, &recvDispls}) scribble(v);
      const collResult_t ended = collGroupEnd();
      const std::string who = "rank " + std::to_string(rank) + " of " + std::to_string(n) + ": ";
      for (collResult_t rc : rcs)
        if (rc != collSuccess) out.push_back(who + "a call in the group returned " + collGetErrorString(rc));
      if (ended != collSuccess) {
        out.push_back(who + "collGroupEnd returned " + collGetErrorString(ended) + ": " + collGetLastError(comm));
        return out;
      }
      const auto* gr = reinterpret_cast<const int32_t*>(gatherRecv.data());
      for (int p = 0, at = 0; p < n; ++p)
        for (int i = 0; i <= p; ++i, ++at)
          if (gr[at] != valueOf(p, i, 0)) {
            out.push_back(who + "all-gather element " + std::to_string(at) + " is " + std::to_string(gr[at]));
            p = n;
            break;
          }
      const auto* rr = reinterpret_cast<const int32_t*>(reduceRecv.data());
      for (size_t i = 0; i < blocks[rank]; ++i) {
        int64_t want = 0;
        for (int p = 0; p < n; ++p) want += valueOf(p, myOffset + i, 1);
        if (rr[i] != want) {
          out.push_back(who + "reduce-scatter element " + std::to_string(i) + " is " + std::to_string(rr[i]) +
                        ", expected " + std::to_string(want));
          break;
        }
      }
      const auto* ar = reinterpret_cast<const int32_t*>(a2aRecv.data());
      for (int f = 0; f < n; ++f)
        for (size_t i = 0; i < fromCounts[f]; ++i)
          if (ar[fromDispls[f] + i] != valueOf(f, i, rank)) {
            out.push_back(who + "all-to-all element " + std::to_string(i) + " from rank " + std::to_string(f) + " is " +
                          std::to_string(ar[fromDispls[f] + i]));
            f = n;
            break;
          }
      const std::pair<const GuardedMemory*, const char*> buffers[] = {
          {&gatherSend, "all-gather send"},     {&gatherRecv, "all-gather receive"},
          {&reduceSend, "reduce-scatter send"}, {&reduceRecv, "reduce-scatter receive"},
          {&a2aSend, "all-to-all send"},        {&a2aRecv, "all-to-all receive"}};
      for (const auto& [buffer, name] : buffers) {
        const std::string damage = buffer->damage(name);
        if (!damage.empty()) out.push_back(who + damage);
      }
      return out;
    });
    EXPECT_TRUE(failures.empty()) << nranks << " ranks: " << joinFailures(failures);
  }
}

// Ranks that pass different recvcounts: the call fails (the tags, the counts' digest or the slice
// sizes differ) and no byte lands outside the buffers each rank described. Counts of a few elements
// take the one-shot inline lines, tens of elements its regions; both collectives that run there.
TEST(VCollectiveErrors, CountsThatDifferBetweenRanksWriteNothingPastABuffer) {
  collConfig_t config = COLL_CONFIG_INITIALIZER;
  config.timeoutMs = 20000;
  for (size_t unit : {size_t{1}, size_t{10}})
    for (bool gather : {true, false})
      for (int second : {3, 0, 12}) {
        const bool sameTotal = second == 0;
        auto failures = runAsThreads(
            2,
            [unit, gather, second](collComm_t comm, int rank, int) {
              // Rank 0 believes {1, 2}; rank 1 believes {1, 3} (another total), {2, 1} (the same) or
              // {1, 12} (at one element per unit, a total past the inline line's: the other path); times unit.
              std::vector<size_t> counts = {unit, 2 * unit};
              if (rank == 1) counts = second == 0 ? std::vector<size_t>{2 * unit, unit} : std::vector<size_t>{unit, second * unit};
              std::vector<size_t> displs = {0, counts[0]};
              const size_t total = counts[0] + counts[1];
              GuardedMemory send((gather ? counts[rank] : total) * 4), recv((gather ? total : counts[rank]) * 4);
              poison(send.data(), send.bytes());
              collResult_t rc = gather ? collAllGatherV(send.data(), counts[rank], recv.data(), counts.data(),
                                                        displs.data(), collInt32, comm, nullptr)
                                       : collReduceScatterV(send.data(), recv.data(), counts.data(), collInt32, collSum,
                                                            comm, nullptr);
              std::vector<std::string> out;
              if (rc == collSuccess) out.push_back("rank " + std::to_string(rank) + ": a mismatched call succeeded");
              const std::string damage = recv.damage("receive buffer") + send.damage("send buffer");
              if (!damage.empty()) out.push_back("rank " + std::to_string(rank) + ": " + damage);
              return out;
            },
            &config);
        EXPECT_TRUE(failures.empty()) << (gather ? "all-gather-v, " : "reduce-scatter-v, ") << unit << " per unit, "
                                      << (sameTotal ? "same total" : "other total") << " (rank 1's second count "
                                      << second << "): " << joinFailures(failures);
      }
}

// An all-to-all where rank 1 expects another count from rank 0 than rank 0 sends, more or fewer:
// the pair's tags differ, rank 1's call fails, and nothing lands past a buffer. (Rank 0 may finish
// first: from where it stands every message matched, as an MPI sender's would.) Small pairs go
// through the FIFO; pairs of 512 KiB by a single copy (the window set to hold them), where rank 1
// would read rank 0's buffer straight: rank 0's own receive from rank 1, which matches, shows
// that path was taken.
TEST(VCollectiveErrors, AllToAllVPairCountsThatDifferWriteNothingPastABuffer) {
  for (size_t base : {size_t{6}, size_t{1} << 16})
    for (int delta : {3, -3}) {
      const bool single = base > 6;
      // Processes: the settings are read once per process.
      auto failures = runAsProcessesWithSetup(
          2,
          [single](int) {
            setenv("COLL_TIMEOUT_MS", "20000", 1);
            if (!single) return;
            setenv("COLL_SHM_SINGLE_COPY_BYTES", "4096", 1);
            setenv("COLL_SHM_SINGLE_COPY_MAX_BYTES", "4194304", 1);
          },
          [base, delta, single](collComm_t comm, int rank, int) {
            std::vector<size_t> sendcounts = {base, base}, recvcounts = {base, base};
            if (rank == 1) recvcounts[0] = base + delta;
            std::vector<size_t> sdispls = {0, base}, rdispls = {0, recvcounts[0]};
            GuardedMemory send(2 * base * 8), recv((recvcounts[0] + recvcounts[1]) * 8);
            poison(recv.data(), recv.bytes());
            collResult_t rc = collAllToAllV(send.data(), sendcounts.data(), sdispls.data(), recv.data(),
                                            recvcounts.data(), rdispls.data(), collFloat64, comm, nullptr);
            std::vector<std::string> out;
            const std::string message = collGetLastError(comm);
            if (rank == 1 && rc == collSuccess) out.push_back("rank 1: a mismatched call succeeded");
            if (rank == 1 && message.find("AllToAllV with count " + std::to_string(base)) == std::string::npos)
              out.push_back("rank 1: the message does not name the count rank 0 sent: " + message);
            if (rank == 0 && single && rc == collSuccess &&
                transportCount(comm, coll::transport::kSingleCopyReads) == 0)
              out.push_back("rank 0: its receive of 512 KiB did not go by a single copy");
            const std::string damage = recv.damage("receive buffer") + send.damage("send buffer");
            if (!damage.empty()) out.push_back("rank " + std::to_string(rank) + ": " + damage);
            return out;
          },
          initMustSucceed(), 60);
      EXPECT_TRUE(failures.empty()) << "count " << base << ", rank 1 expecting " << delta
                                    << " more: " << joinFailures(failures);
    }
}

}  // namespace
}  // namespace colltest
