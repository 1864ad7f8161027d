// Verbs faults that only verbs has, over the verbs emulator (CMake sets COLL_TRANSPORTS=verbs and
// names the emulator): a rank whose queue pairs never reach RTS ends init with an error on every
// rank within seconds, the one that failed naming the step and the peer.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <string>
#include <thread>
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

}  // namespace
}  // namespace colltest
