// Ranks whose planning settings differ would plan different algorithms and wait on each other
// forever; init refuses them with collInvalidUsage on every rank. Each child process sets its
// own environment before the library first reads it, so this test has its own binary (the
// parent must not read the parameters: it only makes the unique id).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "collective.h"
#include "rank_launcher.h"

namespace colltest {
namespace {

TEST(SettingsMismatch, DifferentAlgorithmOverridesAreRefusedAtInit) {
  auto failures = runAsProcessesWithSetup(
      2, [](int rank) { setenv("COLL_ALGO", rank == 0 ? "allreduce:ring" : "allreduce:tree", 1); },
      [](collComm_t, int rank, int) {
        return std::vector<std::string>{"rank " + std::to_string(rank) + ": init succeeded despite the mismatch"};
      },
      [](int rank, collResult_t rc, const std::string& message) -> std::vector<std::string> {
        if (rc != collInvalidUsage) return {"rank " + std::to_string(rank) + ": init returned " + std::to_string(rc)};
        if (message.find("COLL_ALGO") == std::string::npos)
          return {"rank " + std::to_string(rank) + ": message lacks the variable: " + message};
        return {};
      });
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

}  // namespace
}  // namespace colltest
