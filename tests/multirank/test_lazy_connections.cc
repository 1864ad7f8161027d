// Transports connect the peers the plans use, when they first use them (transport/domain.h):
// after a collective, each rank holds connections to exactly the peers its schedule names, read
// from the planner rather than written down here; a rank that dies before anyone connected to it
// still gives every survivor an error within seconds; and a group in which both ranks receive
// before they send does not deadlock on connection setup. Ranks are processes, so shared memory
// and sockets (the "net." run, COLL_TRANSPORTS=^shm) are the real ones.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "collective.h"
#include "rank_launcher.h"
#include "src/api_internal.h"
#include "src/comm.h"
#include "src/plan/planner.h"

namespace colltest {
namespace {

using Clock = std::chrono::steady_clock;

std::string listOf(const std::set<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ",") + std::to_string(r);
  return "{" + text + "}";
}

// Peers the executor will ask for: every step that moves data (zero-count steps touch no one).
void schedulePeers(const coll::Schedule& schedule, std::set<int>* sends, std::set<int>* recvs) {
  for (const coll::Step& step : schedule.steps) {
    if (step.count == 0) continue;
    for (int i = 0; i < step.nsend; ++i) sends->insert(step.sendPeers[i]);
    for (int i = 0; i < step.nrecv; ++i) recvs->insert(step.recvPeers[i]);
  }
}

struct Held {
  std::set<int> sends, recvs;
  int resources = 0;
};

Held heldBy(collComm_t comm) {
  Held held;
  for (const auto& [name, usage] : coll::communicatorOf(comm)->transportUsage()) {
    held.sends.insert(usage.sendPeers.begin(), usage.sendPeers.end());
    held.recvs.insert(usage.recvPeers.begin(), usage.recvPeers.end());
    held.resources += usage.resources;
  }
  return held;
}

struct LazyCase {
  int nranks;
  const char* algo;  // COLL_ALGO's all-reduce row
};

class LazyConnections : public ::testing::TestWithParam<LazyCase> {};

TEST_P(LazyConnections, AllReduceConnectsExactlyTheSchedulesPeers) {
  const LazyCase c = GetParam();
  const std::string algoSetting = std::string("allreduce:") + c.algo;
  auto failures = runAsProcessesWithSetup(
      c.nranks, [&](int) { setenv("COLL_ALGO", algoSetting.c_str(), 1); },
      [](collComm_t comm, int rank, int nranks) -> std::vector<std::string> {
        std::vector<std::string> failures;
        const std::string me = "rank " + std::to_string(rank) + ": ";
        // Nothing asked for before the first call. (Sockets may already be there: a peer that
        // reached its first call sooner dials this rank, which accepts in the background.)
        Held before = heldBy(comm);
        if (!before.sends.empty() || !before.recvs.empty())
          failures.push_back(me + "holds connections before any call (sends to " + listOf(before.sends) +
                             ", receives from " + listOf(before.recvs) + ")");
        // Enough elements that every step of the schedule moves some.
        const size_t count = static_cast<size_t>(nranks) * 4096;
        std::vector<float> in(count), out(count, -1.0f);
        for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>((rank + 1) * (i % 7 + 1));
        if (collAllReduce(in.data(), out.data(), count, collFloat, collSum, comm, nullptr) != collSuccess)
          return {me + "all-reduce failed: " + collGetLastError(comm)};
        const float rankSum = static_cast<float>(nranks * (nranks + 1) / 2);
        for (size_t i = 0; i < count; ++i)
          if (out[i] != rankSum * static_cast<float>(i % 7 + 1)) {
            failures.push_back(me + "wrong result at " + std::to_string(i));
            break;
          }
        // The peers this rank's plan names, as the communicator's own planner builds them.
        coll::Communicator* communicator = coll::communicatorOf(comm);
        coll::CollCall call;
        call.type = coll::CollType::kAllReduce;
        call.count = count;
        call.datatype = collFloat;
        call.elemSize = sizeof(float);
        coll::Plan plan = coll::planCall(call, communicator->planContext());
        std::set<int> sends, recvs;
        schedulePeers(coll::buildSchedule(call, plan, rank, communicator->planContext()), &sends, &recvs);
        if (sends.empty() || recvs.empty()) failures.push_back(me + "the plan names no peers: not a schedule?");
        Held after = heldBy(comm);
        if (after.sends != sends || after.recvs != recvs)
          failures.push_back(me + "holds sends to " + listOf(after.sends) + " and receives from " +
                             listOf(after.recvs) + "; the schedule uses sends to " + listOf(sends) +
                             " and receives from " + listOf(recvs));
        // The resources follow the peers: a FIFO per direction and peer, or S sockets per peer.
        std::set<int> peers = sends;
        peers.insert(recvs.begin(), recvs.end());
        const int perPeer = after.resources / std::max<int>(1, static_cast<int>(peers.size()));
        const bool fifos = after.resources == static_cast<int>(sends.size() + recvs.size());
        const bool sockets = perPeer > 0 && after.resources == perPeer * static_cast<int>(peers.size());
        if (!fifos && !sockets)
          failures.push_back(me + std::to_string(after.resources) + " resources for " + std::to_string(peers.size()) +
                             " peers");
        return failures;
      },
      initMustSucceed(), 240);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

INSTANTIATE_TEST_SUITE_P(Plans, LazyConnections,
                         ::testing::Values(LazyCase{8, "ring"}, LazyCase{16, "ring"}, LazyCase{8, "tree"},
                                           LazyCase{16, "tree"}),
                         [](const ::testing::TestParamInfo<LazyCase>& info) {
                           return std::string(info.param.algo) + std::to_string(info.param.nranks) + "ranks";
                         });

// Victim 3 is the highest rank of its pairs: over sockets its neighbours only wait for its dial,
// so nothing closes on them and only the store's departure notice can tell them.
class LazyConnectionFaults : public ::testing::TestWithParam<int> {};

TEST_P(LazyConnectionFaults, RankKilledBeforeItsFirstConnectionGivesEverySurvivorAnError) {
  const int nranks = 4;
  const int victim = GetParam();
  auto failures = runAsProcessesWithSetup(
      nranks,
      [](int) {
        setenv("COLL_ALGO", "allreduce:ring", 1);
        setenv("COLL_TIMEOUT_MS", "30000", 1);
      },
      [victim](collComm_t comm, int rank, int) -> std::vector<std::string> {
        // The victim dies between init and its first call: no one has connected to it yet.
        if (rank == victim) kill(getpid(), SIGKILL);
        std::vector<float> in(1 << 16, 1.0f), out(1 << 16);
        const std::string me = "rank " + std::to_string(rank) + ": ";
        auto start = Clock::now();
        collResult_t rc = collAllReduce(in.data(), out.data(), in.size(), collFloat, collSum, comm, nullptr);
        double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        if (rc == collSuccess) return {me + "the all-reduce succeeded without its victim"};
        // Well inside the 30 s timeout: the death was detected, not waited out.
        if (elapsed > 15) return {me + "the error came after " + std::to_string(elapsed) + " s"};
        return {};
      },
      initMustSucceed(), 90);
  std::vector<std::string> survivors;
  for (const auto& f : failures)
    if (f.find("rank " + std::to_string(victim) + " ") != 0) survivors.push_back(f);
  EXPECT_TRUE(survivors.empty()) << joinFailures(survivors);
}

INSTANTIATE_TEST_SUITE_P(Victims, LazyConnectionFaults, ::testing::Values(2, 3),
                         [](const ::testing::TestParamInfo<int>& info) { return "rank" + std::to_string(info.param); });

// Every rank receives from its left neighbour and sends to its right one, the receive issued
// first, in one group: no rank may wait for a connection its peer has not asked for yet.
TEST(LazyPointToPoint, GroupsThatReceiveBeforeTheySendDoNotDeadlock) {
  for (int nranks : {2, 4}) {
    auto failures = runAsProcesses(
        nranks,
        [](collComm_t comm, int rank, int n) -> std::vector<std::string> {
          const int left = (rank + n - 1) % n, right = (rank + 1) % n;
          const size_t count = 100000;  // several slots
          std::vector<int32_t> out(count), in(count, -1);
          for (size_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(rank * 1000003 + i);
          collGroupStart();
          collRecv(in.data(), count, collInt32, left, comm, nullptr);
          collSend(out.data(), count, collInt32, right, comm, nullptr);
          if (collGroupEnd() != collSuccess) return {"rank " + std::to_string(rank) + ": " + collGetLastError(comm)};
          for (size_t i = 0; i < count; ++i)
            if (in[i] != static_cast<int32_t>(left * 1000003 + i))
              return {"rank " + std::to_string(rank) + ": wrong value at " + std::to_string(i)};
          Held held = heldBy(comm);
          if (held.sends != std::set<int>{right} || held.recvs != std::set<int>{left})
            return {"rank " + std::to_string(rank) + ": holds sends to " + listOf(held.sends) + ", receives from " +
                    listOf(held.recvs)};
          return {};
        },
        120);
    EXPECT_TRUE(failures.empty()) << nranks << " ranks: " << joinFailures(failures);
  }
}

}  // namespace
}  // namespace colltest
