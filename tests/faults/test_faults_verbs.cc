// Verbs faults that only verbs has, over the verbs emulator (CMake sets COLL_TRANSPORTS=verbs and
// names the emulator): a rank whose queue pairs never reach RTS ends init with an error on every
// rank within seconds, the one that failed naming the step and the peer; a rank whose regions
// advertise a wrong rkey, and a rank whose link fails mid-stream, end in an error on every rank
// within seconds, the peers that wrote naming the rank and the verbs status.
#include <gtest/gtest.h>
#include <dlfcn.h>
#include <stdlib.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collective.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

using Clock = std::chrono::steady_clock;

TEST(VerbsFaults, QueuePairThatNeverReachesRtsFailsInitOnEveryRank) {
  const int refusing = 1;
  auto failures = runAsProcessesWithSetup(
      3,
      [](int rank) {
        setenv("COLL_TIMEOUT_MS", "20000", 1);
        // The emulator's fault injection: this rank's QPs stop at RTR.
        if (rank == refusing) setenv("COLL_VERBS_EMU_REFUSE_RTS", "1", 1);
        setenv("COLLTEST_INIT_START", std::to_string(Clock::now().time_since_epoch().count()).c_str(), 1);
      },
      [](collComm_t, int rank, int) -> std::vector<std::string> {
        return {"rank " + std::to_string(rank) + ": init succeeded with a QP that never reached RTS"};
      },
      [](int rank, collResult_t rc, const std::string& message) -> std::vector<std::string> {
        const auto started = Clock::time_point(Clock::duration(std::stoll(getenv("COLLTEST_INIT_START"))));
        const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
        std::vector<std::string> problems;
        if (seconds > 15)
          problems.push_back("rank " + std::to_string(rank) + ": init failed only after " + std::to_string(seconds) +
                             " s");
        if (rank == refusing && message.find("did not reach RTS") == std::string::npos)
          problems.push_back("rank " + std::to_string(rank) + ": the message does not say RTS: " + message);
        if (rank != refusing && rc != collRemoteError && rc != collTimeout)
          problems.push_back("rank " + std::to_string(rank) + ": " + collGetErrorString(rc) + ": " + message);
        return problems;
      },
      60);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// One rank gets the emulator's fault `variable`; every rank streams all-reduces until one fails.
// Each must fail within 15 s of its start (init included: probes may find the fault there), and
// at least one other rank must name the faulty one and say `status`, the verbs words for it.
std::vector<std::string> streamWithFaultyRank(const char* variable, const char* value, const std::string& status) {
  const int faulty = 1;
  auto elapsedOk = [](int rank, std::vector<std::string>* problems) {
    const auto started = Clock::time_point(Clock::duration(std::stoll(getenv("COLLTEST_INIT_START"))));
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    if (seconds > 15)
      problems->push_back("rank " + std::to_string(rank) + ": failed only after " + std::to_string(seconds) + " s");
  };
  // A peer's message names the faulty rank and the status: the only way the parent learns which
  // did is this marker in the problems it returns, filtered out below.
  const std::string named = "NAMED:";
  auto judge = [&](int rank, collResult_t rc, const std::string& message) {
    std::vector<std::string> problems;
    elapsedOk(rank, &problems);
    if (rc != collRemoteError && rc != collTimeout && rc != collSystemError)
      problems.push_back("rank " + std::to_string(rank) + ": " + collGetErrorString(rc) + ": " + message);
    if (rank != faulty && message.find("rank " + std::to_string(faulty)) != std::string::npos &&
        message.find(status) != std::string::npos)
      problems.push_back(named + message);
    return problems;
  };
  auto failures = runAsProcessesWithSetup(
      3,
      [&](int rank) {
        setenv("COLL_TIMEOUT_MS", "20000", 1);
        if (rank == faulty) setenv(variable, value, 1);
        setenv("COLLTEST_INIT_START", std::to_string(Clock::now().time_since_epoch().count()).c_str(), 1);
      },
      [&](collComm_t comm, int rank, int) -> std::vector<std::string> {
        std::vector<float> in(1 << 16, 1.0f), out(in.size());
        for (int i = 0; i < 2000; ++i) {
          collResult_t rc = collAllReduce(in.data(), out.data(), in.size(), collFloat, collSum, comm, nullptr);
          if (rc != collSuccess) return judge(rank, rc, collGetLastError(comm));
        }
        return {"rank " + std::to_string(rank) + ": 2000 all-reduces succeeded despite the fault"};
      },
      [&](int rank, collResult_t rc, const std::string& message) { return judge(rank, rc, message); }, 60);
  bool someoneNamed = false;
  std::vector<std::string> problems;
  for (std::string& f : failures) {
    if (f.find(named) != std::string::npos)
      someoneNamed = true;
    else
      problems.push_back(std::move(f));
  }
  if (!someoneNamed)
    problems.push_back("no rank named rank " + std::to_string(faulty) + " with \"" + status + "\"");
  return problems;
}

TEST(VerbsFaults, WrongRkeyGivesEveryRankAnErrorNamingThePeerAndStatus) {
  auto failures = streamWithFaultyRank("COLL_VERBS_EMU_CORRUPT_RKEY", "1", "remote access error");
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST(VerbsFaults, LinkErrorMidStreamGivesEveryRankAnError) {
  // Enough writes for setup and a few collectives, then the link fails.
  auto failures = streamWithFaultyRank("COLL_VERBS_EMU_FAIL_AFTER", "200", "retry counter exceeded");
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

// The emulator's count of receive completions delivered after a later one (its statistic for
// tests), read from the registry the ranks shared; -1 when the emulator cannot be loaded.
long long overtakenSoFar() {
  const char* library = getenv("COLL_VERBS_LIBRARY");
  void* handle = library != nullptr ? dlopen(library, RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (handle == nullptr) return -1;
  auto count = reinterpret_cast<uint64_t (*)()>(dlsym(handle, "coll_verbs_emu_overtaken"));
  return count != nullptr ? static_cast<long long>(count()) : -1;
}

TEST(VerbsReordering, DelayedQueuePairMakesArrivalsOutOfOrderAndResultsStayRight) {
  const long long before = overtakenSoFar();
  ASSERT_GE(before, 0) << "the emulator's statistic is missing";
  auto failures = runAsProcessesWithSetup(
      3,
      [](int) {
        // Two QPs per peer, slots striped over them; the emulator holds back QP 1's arrivals.
        const char* const settings[][2] = {{"COLL_IB_QPS_PER_CONNECTION", "2"},
                                           {"COLL_NET_FIFO_DEPTH", "4"},
                                           {"COLL_SHM_SLOT_BYTES", "4096"},
                                           {"COLL_VERBS_EMU_DELAY_QP", "1"}};
        for (const auto& setting : settings) setenv(setting[0], setting[1], 1);
      },
      [](collComm_t comm, int rank, int nranks) -> std::vector<std::string> {
        std::vector<float> in(1 << 15), out(in.size());
        for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((i + rank) % 7);
        for (int round = 0; round < 5; ++round) {
          if (collAllReduce(in.data(), out.data(), in.size(), collFloat, collSum, comm, nullptr) != collSuccess)
            return {"rank " + std::to_string(rank) + ": " + collGetLastError(comm)};
          for (size_t i = 0; i < in.size(); ++i) {
            float want = 0;
            for (int r = 0; r < nranks; ++r) want += static_cast<float>((i + r) % 7);
            if (out[i] != want) return {"rank " + std::to_string(rank) + ": wrong sum at " + std::to_string(i)};
          }
        }
        return {};
      },
      initMustSucceed(), 120);
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
  // Without this the test could pass with nothing reordered at all.
  EXPECT_GT(overtakenSoFar(), before) << "no arrival was delivered after a later one";
}

}  // namespace
}  // namespace colltest
